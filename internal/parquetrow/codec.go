package parquetrow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
)

// ErrMalformed is wrapped by every error of Codec.Decode.
var ErrMalformed = errors.New("s3once sink: malformed Parquet row encoding")

var timeType = reflect.TypeFor[time.Time]()

type (
	rowEncodeFunc func(dst []byte, v reflect.Value) ([]byte, error)
	rowDecodeFunc func(src []byte, v reflect.Value) ([]byte, error)
)

// Codec encodes and decodes values of one struct type. It is safe for
// concurrent use.
type Codec struct {
	t   reflect.Type
	enc rowEncodeFunc
	dec rowDecodeFunc
}

// New compiles the codec of t, a struct type. It refuses, naming the
// field, what has no deterministic Parquet form here: maps (Go's iteration
// order is random), interfaces, channels, functions, complex numbers, unsafe
// pointers, arrays other than byte arrays, embedded pointers, and recursive
// types.
func New(t reflect.Type) (*Codec, error) {
	if t == nil || t.Kind() != reflect.Struct || t == timeType {
		return nil, fmt.Errorf("format \"parquet\" writes structs, not %v", t)
	}
	c := &Codec{t: t}
	var err error
	c.enc, c.dec, err = compileRow(t, t.String(), map[reflect.Type]bool{})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Type is the struct type the codec encodes.
func (c *Codec) Type() reflect.Type { return c.t }

// Append appends the encoding of v, a value of the codec's type.
func (c *Codec) Append(dst []byte, v reflect.Value) ([]byte, error) {
	if !v.CanAddr() {
		p := reflect.New(c.t).Elem()
		p.Set(v)
		v = p
	}
	return c.enc(dst, v)
}

// Decode sets v, a settable value of the codec's type, from src, all of
// which must be one row.
func (c *Codec) Decode(src []byte, v reflect.Value) error {
	rest, err := c.dec(src, v)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the row", ErrMalformed, len(rest))
	}
	return nil
}

// Fields lists the fields of struct type t that its row holds, in order,
// with their index paths (embedded structs flattened), as parquet-go does;
// path names t in errors.
func Fields(t reflect.Type, path string) ([]reflect.StructField, error) {
	var out []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if tag, ok := f.Tag.Lookup("parquet"); ok {
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" && tag != "-," {
				continue
			}
		}
		if f.Anonymous {
			if f.Type.Kind() != reflect.Struct {
				return nil, fmt.Errorf("format \"parquet\": embedded field %s.%s has type %v; only embedded structs are written (name the field, or embed the struct itself)", path, f.Name, f.Type)
			}
			inner, err := Fields(f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			for _, g := range inner {
				g.Index = append([]int{i}, g.Index...)
				out = append(out, g)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

func compileRow(t reflect.Type, path string, open map[reflect.Type]bool) (rowEncodeFunc, rowDecodeFunc, error) {
	fail := func(what string) (rowEncodeFunc, rowDecodeFunc, error) {
		return nil, nil, fmt.Errorf("format \"parquet\": field %s has type %v: %s", path, t, what)
	}
	if t == timeType {
		return encodeTime, decodeTime, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return encodeBool, decodeBool, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := t.Size()
		return intCodec(int(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := t.Size()
		return uintCodec(int(n))
	case reflect.Float32:
		return encodeFloat32, decodeFloat32, nil
	case reflect.Float64:
		return encodeFloat64, decodeFloat64, nil
	case reflect.String:
		return encodeString, decodeString, nil
	case reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 {
			return fail("Parquet holds byte arrays only; use a slice")
		}
		return byteArrayCodec(t.Len())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nullable(encodeBytes, decodeBytes)
		}
		enc, dec, err := compileRow(t.Elem(), path+"[]", open)
		if err != nil {
			return nil, nil, err
		}
		return sliceCodec(t, enc, dec)
	case reflect.Pointer:
		enc, dec, err := compileRow(t.Elem(), path, open)
		if err != nil {
			return nil, nil, err
		}
		return pointerCodec(t, enc, dec)
	case reflect.Struct:
		if open[t] {
			return fail("the type holds itself; Parquet schemas are finite")
		}
		open[t] = true
		defer delete(open, t)
		fields, err := Fields(t, path)
		if err != nil {
			return nil, nil, err
		}
		encs := make([]rowEncodeFunc, len(fields))
		decs := make([]rowDecodeFunc, len(fields))
		index := make([][]int, len(fields))
		for i, f := range fields {
			if encs[i], decs[i], err = compileRow(f.Type, path+"."+f.Name, open); err != nil {
				return nil, nil, err
			}
			index[i] = f.Index
		}
		return structCodec(encs, decs, index)
	case reflect.Map:
		return fail("maps are refused: Go iterates them in random order, so their rows would not be the same bytes twice; use a slice of key-value structs sorted by key")
	case reflect.Interface:
		return fail("interfaces are refused: the Parquet schema comes from the type, and an interface has none; use a concrete type")
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return fail("it is not data and has no Parquet form")
	case reflect.Complex64, reflect.Complex128:
		return fail("Parquet has no complex numbers; write the real and imaginary parts as two fields")
	}
	return fail("it has no Parquet form")
}

func encodeBool(dst []byte, v reflect.Value) ([]byte, error) {
	if v.Bool() {
		return append(dst, 1), nil
	}
	return append(dst, 0), nil
}

func decodeBool(src []byte, v reflect.Value) ([]byte, error) {
	if len(src) < 1 || src[0] > 1 {
		return nil, fmt.Errorf("%w: bad boolean", ErrMalformed)
	}
	v.SetBool(src[0] == 1)
	return src[1:], nil
}

// appendUint appends the low n bytes of u, big-endian.
func appendUint(dst []byte, u uint64, n int) []byte {
	switch n {
	case 1:
		return append(dst, byte(u))
	case 2:
		return binary.BigEndian.AppendUint16(dst, uint16(u))
	case 4:
		return binary.BigEndian.AppendUint32(dst, uint32(u))
	}
	return binary.BigEndian.AppendUint64(dst, u)
}

func takeUint(src []byte, n int) (uint64, []byte, error) {
	if len(src) < n {
		return 0, nil, fmt.Errorf("%w: input ends inside a number", ErrMalformed)
	}
	var u uint64
	switch n {
	case 1:
		u = uint64(src[0])
	case 2:
		u = uint64(binary.BigEndian.Uint16(src))
	case 4:
		u = uint64(binary.BigEndian.Uint32(src))
	default:
		u = binary.BigEndian.Uint64(src)
	}
	return u, src[n:], nil
}

func intCodec(n int) (rowEncodeFunc, rowDecodeFunc, error) {
	sign := uint64(1) << (8*n - 1)
	shift := 64 - 8*n
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		return appendUint(dst, uint64(v.Int())^sign, n), nil
	}
	dec := func(src []byte, v reflect.Value) ([]byte, error) {
		u, rest, err := takeUint(src, n)
		if err != nil {
			return nil, err
		}
		v.SetInt(int64((u^sign)<<shift) >> shift)
		return rest, nil
	}
	return enc, dec, nil
}

func uintCodec(n int) (rowEncodeFunc, rowDecodeFunc, error) {
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		return appendUint(dst, v.Uint(), n), nil
	}
	dec := func(src []byte, v reflect.Value) ([]byte, error) {
		u, rest, err := takeUint(src, n)
		if err != nil {
			return nil, err
		}
		v.SetUint(u)
		return rest, nil
	}
	return enc, dec, nil
}

// orderedFloatBits maps IEEE 754 bits of width w to bits that compare as
// unsigned integers in the order of the numbers; orderedFloatValue undoes it.
func orderedFloatBits(b uint64, w int) uint64 {
	sign := uint64(1) << (w - 1)
	if b&sign != 0 {
		return ^b & (sign<<1 - 1)
	}
	return b | sign
}

func orderedFloatValue(o uint64, w int) uint64 {
	sign := uint64(1) << (w - 1)
	if o&sign != 0 {
		return o &^ sign
	}
	return ^o & (sign<<1 - 1)
}

func encodeFloat32(dst []byte, v reflect.Value) ([]byte, error) {
	// Read the bits in place: v.Float() widens to float64, which quiets a
	// signalling NaN. append makes every value addressable.
	f := *(*float32)(v.Addr().UnsafePointer())
	return appendUint(dst, orderedFloatBits(uint64(math.Float32bits(f)), 32), 4), nil
}

func decodeFloat32(src []byte, v reflect.Value) ([]byte, error) {
	u, rest, err := takeUint(src, 4)
	if err != nil {
		return nil, err
	}
	// Set the bits in place: SetFloat narrows from float64 and may quiet a
	// signalling NaN.
	*(*float32)(v.Addr().UnsafePointer()) = math.Float32frombits(uint32(orderedFloatValue(u, 32)))
	return rest, nil
}

func encodeFloat64(dst []byte, v reflect.Value) ([]byte, error) {
	return appendUint(dst, orderedFloatBits(math.Float64bits(v.Float()), 64), 8), nil
}

func decodeFloat64(src []byte, v reflect.Value) ([]byte, error) {
	u, rest, err := takeUint(src, 8)
	if err != nil {
		return nil, err
	}
	v.SetFloat(math.Float64frombits(orderedFloatValue(u, 64)))
	return rest, nil
}

// appendEscaped appends s with each 0x00 as 0x00 0xFF, then 0x00 0x01.
func appendEscaped(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			dst = append(dst, s...)
			break
		}
		dst = append(append(dst, s[:i+1]...), 0xFF)
		s = s[i+1:]
	}
	return append(dst, 0, 1)
}

// takeEscaped reads what appendEscaped wrote. The result aliases src when
// it holds no 0x00.
func takeEscaped(src []byte) ([]byte, []byte, error) {
	i := bytes.IndexByte(src, 0)
	if i < 0 || i+1 >= len(src) {
		return nil, nil, fmt.Errorf("%w: unterminated string", ErrMalformed)
	}
	if src[i+1] == 1 {
		return src[:i], src[i+2:], nil
	}
	var out []byte
	for {
		switch {
		case i < 0 || i+1 >= len(src):
			return nil, nil, fmt.Errorf("%w: unterminated string", ErrMalformed)
		case src[i+1] == 1:
			return append(out, src[:i]...), src[i+2:], nil
		case src[i+1] == 0xFF:
			out = append(out, src[:i+1]...)
			src = src[i+2:]
			i = bytes.IndexByte(src, 0)
		default:
			return nil, nil, fmt.Errorf("%w: bad escape 0x00 0x%02x in a string", ErrMalformed, src[i+1])
		}
	}
}

func encodeString(dst []byte, v reflect.Value) ([]byte, error) {
	return appendEscaped(dst, v.String()), nil
}

func decodeString(src []byte, v reflect.Value) ([]byte, error) {
	s, rest, err := takeEscaped(src)
	if err != nil {
		return nil, err
	}
	v.SetString(string(s))
	return rest, nil
}

// encodeBytes and decodeBytes are a non-nil []byte's (nullable adds the
// presence byte).
func encodeBytes(dst []byte, v reflect.Value) ([]byte, error) {
	b := v.Bytes()
	return appendEscaped(dst, string(b)), nil // the conversion does not allocate
}

func decodeBytes(src []byte, v reflect.Value) ([]byte, error) {
	b, rest, err := takeEscaped(src)
	if err != nil {
		return nil, err
	}
	out := reflect.MakeSlice(v.Type(), len(b), len(b))
	copy(out.Bytes(), b)
	v.Set(out)
	return rest, nil
}

// nullable is the codec of a kind that may be nil (a pointer, a slice), from
// enc and dec, which read and write a value that is not: 0x00 for nil, else
// 0x01 and the value.
func nullable(enc rowEncodeFunc, dec rowDecodeFunc) (rowEncodeFunc, rowDecodeFunc, error) {
	nEnc := func(dst []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(dst, 0), nil
		}
		return enc(append(dst, 1), v)
	}
	nDec := func(src []byte, v reflect.Value) ([]byte, error) {
		present, rest, err := takePresence(src)
		if err != nil {
			return nil, err
		}
		if !present {
			v.SetZero()
			return rest, nil
		}
		return dec(rest, v)
	}
	return nEnc, nDec, nil
}

func takePresence(src []byte) (bool, []byte, error) {
	if len(src) < 1 || src[0] > 1 {
		return false, nil, fmt.Errorf("%w: bad presence byte", ErrMalformed)
	}
	return src[0] == 1, src[1:], nil
}

func byteArrayCodec(n int) (rowEncodeFunc, rowDecodeFunc, error) {
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		start := len(dst)
		dst = append(dst, make([]byte, n)...)
		reflect.Copy(reflect.ValueOf(dst[start:]), v)
		return dst, nil
	}
	dec := func(src []byte, v reflect.Value) ([]byte, error) {
		if len(src) < n {
			return nil, fmt.Errorf("%w: input ends inside a byte array", ErrMalformed)
		}
		reflect.Copy(v, reflect.ValueOf(src[:n]))
		return src[n:], nil
	}
	return enc, dec, nil
}

// Nanosecond timestamps hold the instants whose UnixNano fits an int64.
var (
	minTimestamp = time.Unix(0, math.MinInt64).UTC()
	maxTimestamp = time.Unix(0, math.MaxInt64).UTC()
)

func encodeTime(dst []byte, v reflect.Value) ([]byte, error) {
	t := v.Interface().(time.Time)
	if t.Before(minTimestamp) || t.After(maxTimestamp) {
		return dst, fmt.Errorf("format \"parquet\": time %s is outside what a nanosecond timestamp holds (%s to %s); a zero time.Time is too (use a *time.Time for a time that may be missing)",
			t.Format(time.RFC3339Nano), minTimestamp.Format(time.RFC3339Nano), maxTimestamp.Format(time.RFC3339Nano))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(t.UnixNano())^(1<<63)), nil
}

func decodeTime(src []byte, v reflect.Value) ([]byte, error) {
	u, rest, err := takeUint(src, 8)
	if err != nil {
		return nil, err
	}
	v.Set(reflect.ValueOf(time.Unix(0, int64(u^(1<<63))).UTC()))
	return rest, nil
}

func pointerCodec(t reflect.Type, elemEnc rowEncodeFunc, elemDec rowDecodeFunc) (rowEncodeFunc, rowDecodeFunc, error) {
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		return elemEnc(dst, v.Elem())
	}
	dec := func(src []byte, v reflect.Value) ([]byte, error) {
		p := reflect.New(t.Elem())
		rest, err := elemDec(src, p.Elem())
		if err != nil {
			return nil, err
		}
		v.Set(p)
		return rest, nil
	}
	return nullable(enc, dec)
}

func sliceCodec(t reflect.Type, elemEnc rowEncodeFunc, elemDec rowDecodeFunc) (rowEncodeFunc, rowDecodeFunc, error) {
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		var err error
		for i := 0; i < v.Len(); i++ {
			if dst, err = elemEnc(append(dst, 1), v.Index(i)); err != nil {
				return dst, err
			}
		}
		return append(dst, 0), nil
	}
	elem := t.Elem()
	dec := func(rest []byte, v reflect.Value) ([]byte, error) {
		out := reflect.MakeSlice(t, 0, 0)
		for {
			more, r, err := takePresence(rest)
			if err != nil {
				return nil, err
			}
			rest = r
			if !more {
				break
			}
			e := reflect.New(elem).Elem()
			if rest, err = elemDec(rest, e); err != nil {
				return nil, err
			}
			out = reflect.Append(out, e)
		}
		v.Set(out)
		return rest, nil
	}
	return nullable(enc, dec)
}

func structCodec(encs []rowEncodeFunc, decs []rowDecodeFunc, index [][]int) (rowEncodeFunc, rowDecodeFunc, error) {
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		var err error
		for i, e := range encs {
			if dst, err = e(dst, v.FieldByIndex(index[i])); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	dec := func(src []byte, v reflect.Value) ([]byte, error) {
		var err error
		for i, d := range decs {
			if src, err = d(src, v.FieldByIndex(index[i])); err != nil {
				return nil, err
			}
		}
		return src, nil
	}
	return enc, dec, nil
}
