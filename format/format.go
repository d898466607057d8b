package format

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// Format turns elements into records. A record is the bytes of one element,
// its terminator (such as '\n') included; a file is the concatenation of its
// records, sorted bytewise, after an optional header (see FileHeader).
//
// Implementations must be deterministic (equal elements give equal bytes) and
// safe for concurrent use. Register them under a name with Register, in an
// init function, so that every worker knows them.
type Format interface {
	// Append appends the record of elem to dst and returns the extended
	// slice. An error fails the bundle.
	Append(dst []byte, elem any) ([]byte, error)
	// Extension is the file name suffix of the format, such as ".jsonl".
	Extension() string
	// ContentType is the MIME type of an uncompressed file.
	ContentType() string
}

// TypeChecker is implemented by formats that accept only some element types.
// The sink calls CheckType with the input's element type while the pipeline
// is built, so a wrong type fails at construction.
type TypeChecker interface {
	CheckType(t reflect.Type) error
}

// FileHeader is implemented by formats whose files start with a header (such
// as a CSV header row). The header is not a record: it counts toward no limit.
type FileHeader interface {
	FileHeader() []byte
}

var formats = registry[Format]{kind: "format", field: "Format", fn: "format.Register"}

// Register makes f available to sink.Config.Format under name. It panics if
// name is empty or taken, or f is nil: registration is a program's set-up,
// done in init functions, like database/sql.Register.
func Register(name string, f Format) { formats.register(name, f) }

// Lookup returns the format registered under name, or an error that names
// Config.Format and lists the registered names.
func Lookup(name string) (Format, error) { return formats.lookup(name) }

func init() {
	Register("text", textFormat{})
	Register("jsonl", jsonLinesFormat{})
	Register("csv", CSV{})
}

// textFormat writes strings or byte slices, one per line. A record holding '\n' is
// refused: it would read back as several records.
type textFormat struct{}

var bytesType = reflect.TypeFor[[]byte]()

// CheckType accepts strings and byte slices (and types based on them).
func (textFormat) CheckType(t reflect.Type) error {
	if t.Kind() == reflect.String || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8) {
		return nil
	}
	return fmt.Errorf("format \"text\" writes strings or []byte, not %v; use \"jsonl\" or \"csv\", or convert the elements first", t)
}

// Append appends elem and a newline.
func (textFormat) Append(dst []byte, elem any) ([]byte, error) {
	start := len(dst)
	switch v := elem.(type) {
	case string:
		dst = append(dst, v...)
	case []byte:
		dst = append(dst, v...)
	default:
		rv := reflect.ValueOf(elem)
		switch {
		case rv.Kind() == reflect.String:
			dst = append(dst, rv.String()...)
		case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8:
			dst = append(dst, rv.Bytes()...)
		default:
			return dst[:start], fmt.Errorf("format \"text\" cannot write a %T", elem)
		}
	}
	if i := bytes.IndexByte(dst[start:], '\n'); i >= 0 {
		return dst[:start], fmt.Errorf("format \"text\": record holds a newline at byte %d; it would read back as two records (use \"jsonl\" or \"csv\")", i)
	}
	return append(dst, '\n'), nil
}

func (textFormat) Extension() string   { return ".txt" }
func (textFormat) ContentType() string { return "text/plain; charset=utf-8" }

// jsonLinesFormat writes each element as one line of JSON (encoding/json), so map
// keys come out sorted and equal values give equal bytes.
type jsonLinesFormat struct{}

// CheckType refuses the kinds encoding/json cannot encode.
func (jsonLinesFormat) CheckType(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("format \"jsonl\" cannot encode a %v", t)
	}
	return nil
}

// Append appends the JSON encoding of elem and a newline.
func (jsonLinesFormat) Append(dst []byte, elem any) ([]byte, error) {
	b, err := json.Marshal(elem)
	if err != nil {
		return dst, fmt.Errorf("format \"jsonl\": %w", err)
	}
	return append(append(dst, b...), '\n'), nil
}

func (jsonLinesFormat) Extension() string   { return ".jsonl" }
func (jsonLinesFormat) ContentType() string { return "application/jsonl" }

// CSVRecorder is implemented by element types that choose their own CSV
// fields.
type CSVRecorder interface {
	CSVRecord() []string
}

// CSV writes each element as one CSV record (encoding/csv, "\n" line ends).
// Elements are []string, CSVRecorder values, or structs whose exported fields
// are strings, booleans, integers, floats or time.Time values (written in
// declaration order; times as RFC 3339 in UTC). Header, when set, starts every
// file; register a CSV with a header under a name of your own:
//
//	format.Register("orders-csv", format.CSV{Header: []string{"id", "total"}})
type CSV struct {
	Header []string
	// Comma is the field delimiter; zero means ','.
	Comma rune
}

var (
	csvRecorderType = reflect.TypeFor[CSVRecorder]()
	stringsType     = reflect.TypeFor[[]string]()
	timeType        = reflect.TypeFor[time.Time]()
)

// CheckType accepts []string, CSVRecorder implementations and structs of
// plain fields, and checks the header and delimiter.
func (c CSV) CheckType(t reflect.Type) error {
	if _, err := c.appendFields(nil, append([]string{"x"}, c.Header...)); err != nil {
		return err
	}
	if t == stringsType || t.Implements(csvRecorderType) {
		return nil
	}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return fmt.Errorf("format \"csv\" writes []string, format.CSVRecorder values or structs of plain fields, not %v", t)
	}
	n := 0
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		if !csvPlain(f.Type) {
			return fmt.Errorf("format \"csv\": field %s.%s has type %v; only strings, booleans, numbers and time.Time are written (implement format.CSVRecorder for others)", st, f.Name, f.Type)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("format \"csv\": struct %v has no exported fields", st)
	}
	return nil
}

func csvPlain(t reflect.Type) bool {
	if t == timeType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// Append appends elem as one CSV record.
func (c CSV) Append(dst []byte, elem any) ([]byte, error) {
	var fields []string
	switch v := elem.(type) {
	case []string:
		fields = v
	case CSVRecorder:
		fields = v.CSVRecord()
	default:
		var err error
		if fields, err = csvFields(elem); err != nil {
			return dst, err
		}
	}
	return c.appendFields(dst, fields)
}

func (c CSV) appendFields(dst []byte, fields []string) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w := csv.NewWriter(buf)
	if c.Comma != 0 {
		w.Comma = c.Comma
	}
	if err := w.Write(fields); err != nil {
		return dst, fmt.Errorf("format \"csv\": %w", err)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return dst, fmt.Errorf("format \"csv\": %w", err)
	}
	return buf.Bytes(), nil
}

func csvFields(elem any) ([]string, error) {
	v := reflect.ValueOf(elem)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, errors.New("format \"csv\": nil element")
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("format \"csv\" cannot write a %T", elem)
	}
	t := v.Type()
	fields := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() {
			continue
		}
		f := v.Field(i)
		if f.Type() == timeType {
			fields = append(fields, f.Interface().(time.Time).UTC().Format(time.RFC3339Nano))
			continue
		}
		switch f.Kind() {
		case reflect.String:
			fields = append(fields, f.String())
		case reflect.Bool:
			fields = append(fields, strconv.FormatBool(f.Bool()))
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fields = append(fields, strconv.FormatInt(f.Int(), 10))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			fields = append(fields, strconv.FormatUint(f.Uint(), 10))
		case reflect.Float32:
			fields = append(fields, strconv.FormatFloat(f.Float(), 'g', -1, 32))
		case reflect.Float64:
			fields = append(fields, strconv.FormatFloat(f.Float(), 'g', -1, 64))
		default:
			return nil, fmt.Errorf("format \"csv\": field %s.%s of type %v cannot be written", t, t.Field(i).Name, f.Type())
		}
	}
	return fields, nil
}

// FileHeader returns the header row, or nil when Header is empty.
func (c CSV) FileHeader() []byte {
	if len(c.Header) == 0 {
		return nil
	}
	b, err := c.appendFields(nil, c.Header)
	if err != nil {
		return nil
	}
	return b
}

func (CSV) Extension() string   { return ".csv" }
func (CSV) ContentType() string { return "text/csv; charset=utf-8" }
