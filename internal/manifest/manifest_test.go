package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// golden is what testdata/manifest_v2.jsonl lists, in key order: a key that
// JSON escapes ('&', '<', '>') and one that it writes as is (non-ASCII),
// the largest numbers, zeros, and a windowed, split file's name.
var golden = []Entry{
	{Key: "events/city=Zürich & <co>/global-pane-0-shard-00001-of-00004-file-00000.jsonl.gz"},
	{
		Key:  "events/day=1/20240601T100000Z-20240601T110000Z-pane-2-shard-00003-of-00004-batch-01-of-02-file-00007.jsonl.gz",
		Size: 1<<63 - 1, CRC64NVME: 1<<64 - 1, Records: 1<<63 - 1,
	},
	{Key: "events/day=1/global-pane-0-shard-00000-of-00004-file-00000.jsonl.gz", Size: 1234, CRC64NVME: 0x00ab34cd56ef7890, Records: 10},
}

func readGolden(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "manifest_v2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGolden: the bytes of output version 2's manifest do not change, from
// entries in any order, each given once or more.
func TestGolden(t *testing.T) {
	want := readGolden(t)
	shuffled := []Entry{golden[2], golden[0], golden[1], golden[2]}
	got, err := Encode(shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode wrote\n%s\nwant (testdata/manifest_v2.jsonl)\n%s", got, want)
	}
	dec, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dec, golden) {
		t.Fatalf("Decode(golden) = %+v\nwant %+v", dec, golden)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, entries := range [][]Entry{
		nil,
		{{Key: "a", Size: 1, CRC64NVME: 2, Records: 3}},
		{{Key: "k\"q\\b/\x01\x1f\u2028\u2029\U0001F600 ", Size: 7, CRC64NVME: 0x8000000000000000, Records: 1}},
		{{Key: "b"}, {Key: "a"}, {Key: "a/b"}, {Key: "a b"}, {Key: "A"}},
	} {
		b, err := Encode(entries)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", entries, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%q): %v", b, err)
		}
		want := slices.SortedFunc(slices.Values(entries), func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
		if !slices.Equal(got, want) {
			t.Fatalf("round trip of %+v gave %+v", want, got)
		}
		if again, _ := Encode(got); !bytes.Equal(again, b) {
			t.Fatalf("encoding again gave %q, want %q", again, b)
		}
	}
	if b, err := Encode(nil); err != nil || len(b) != 0 {
		t.Fatalf("Encode(nil) = %q, %v; want no bytes", b, err)
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, entries := range map[string][]Entry{
		"empty key":        {{Key: "", Size: 1}},
		"negative size":    {{Key: "a", Size: -1}},
		"negative records": {{Key: "a", Records: -1}},
		"a key twice":      {{Key: "a", Size: 1}, {Key: "b"}, {Key: "a", Size: 2}},
		"other crc":        {{Key: "a", CRC64NVME: 1}, {Key: "a", CRC64NVME: 2}},
		"not UTF-8":        {{Key: "a\xff"}},
		"cut UTF-8":        {{Key: "Z\xc3"}},
	} {
		if b, err := Encode(entries); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Encode(%+v) = %q, %v; want ErrInvalid", name, entries, b, err)
		}
	}
}

// TestDecodeRefuses: every input that is not exactly what Encode writes is
// refused, with ErrInvalid, whatever a lenient JSON reader would make of it.
func TestDecodeRefuses(t *testing.T) {
	const ok = `{"key":"a","size":1,"crc64nvme":"00000000000000ff","records":2}`
	for name, in := range map[string]string{
		"no final newline":        ok,
		"a blank line":            ok + "\n\n",
		"a leading blank line":    "\n" + ok + "\n",
		"CRLF":                    ok + "\r\n",
		"spaces":                  `{"key": "a","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"trailing space":          ok + " \n",
		"fields reordered":        `{"size":1,"key":"a","crc64nvme":"00000000000000ff","records":2}` + "\n",
		"an unknown field":        `{"key":"a","size":1,"crc64nvme":"00000000000000ff","records":2,"x":1}` + "\n",
		"a field missing":         `{"key":"a","size":1,"crc64nvme":"00000000000000ff"}` + "\n",
		"a field twice":           `{"key":"a","key":"b","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"field name case":         `{"Key":"a","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"upper-case hex":          `{"key":"a","size":1,"crc64nvme":"00000000000000FF","records":2}` + "\n",
		"short hex":               `{"key":"a","size":1,"crc64nvme":"ff","records":2}` + "\n",
		"long hex":                `{"key":"a","size":1,"crc64nvme":"000000000000000ff","records":2}` + "\n",
		"0x":                      `{"key":"a","size":1,"crc64nvme":"0x000000000000ff","records":2}` + "\n",
		"signed hex":              `{"key":"a","size":1,"crc64nvme":"+00000000000000f","records":2}` + "\n",
		"crc as a number":         `{"key":"a","size":1,"crc64nvme":255,"records":2}` + "\n",
		"size as a string":        `{"key":"a","size":"1","crc64nvme":"00000000000000ff","records":2}` + "\n",
		"size with exponent":      `{"key":"a","size":1e0,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"size with fraction":      `{"key":"a","size":1.0,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"size with leading zero":  `{"key":"a","size":01,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"negative zero":           `{"key":"a","size":-0,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"negative size":           `{"key":"a","size":-1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"negative records":        `{"key":"a","size":1,"crc64nvme":"00000000000000ff","records":-2}` + "\n",
		"size overflows":          `{"key":"a","size":9223372036854775808,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"empty key":               `{"key":"","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"null key":                `{"key":null,"size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"escaped slash":           `{"key":"a\/b","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"escaped letter":          `{"key":"\u0061","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"raw ampersand":           `{"key":"a&b","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"escaped non-ASCII":       `{"key":"Z\u00fcrich","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"invalid UTF-8":           "{\"key\":\"a\xff\",\"size\":1,\"crc64nvme\":\"00000000000000ff\",\"records\":2}\n",
		"two objects on a line":   ok + ok + "\n",
		"an array":                "[" + ok + "]\n",
		"keys out of order":       `{"key":"b","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n" + ok + "\n",
		"a key twice":             ok + "\n" + ok + "\n",
		"a key twice, other size": ok + "\n" + `{"key":"a","size":2,"crc64nvme":"00000000000000ff","records":2}` + "\n",
		"not JSON":                "key=a\n",
		"NUL":                     "\x00\n",
	} {
		if got, err := Decode([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Decode(%q) = %+v, %v; want ErrInvalid", name, in, got, err)
		}
	}
	if _, err := Decode([]byte(ok + "\n")); err != nil {
		t.Fatalf("the canonical line itself is refused: %v", err)
	}
}

// FuzzDecodeManifest: Decode never panics, takes only what Encode writes
// (encoding what it returns gives the input again), and returns only
// entries Encode takes.
func FuzzDecodeManifest(f *testing.F) {
	f.Add(readGolden(f))
	f.Add([]byte(`{"key":"a","size":1,"crc64nvme":"00000000000000ff","records":2}` + "\n"))
	f.Add([]byte(`{"key":"a","size":1,"crc64nvme":"00000000000000ff","records":2}`))
	f.Add([]byte(`{"key":"a\u0026","size":0,"crc64nvme":"0000000000000000","records":0}` + "\n" + `{"key":"b","size":0,"crc64nvme":"0000000000000000","records":0}` + "\n"))
	f.Add([]byte("\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode(%q) failed without ErrInvalid: %v", b, err)
			}
			return
		}
		enc, err := Encode(entries)
		if err != nil {
			t.Fatalf("Decode(%q) returned %+v, which Encode refuses: %v", b, entries, err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("Decode(%q) returned %+v, which encodes to %q", b, entries, enc)
		}
	})
}

// FuzzEncodeManifest: what Encode writes decodes to the entries it was
// given, sorted and each once; what it refuses it refuses with ErrInvalid.
func FuzzEncodeManifest(f *testing.F) {
	f.Add("events/global-pane-0-shard-00000-of-00004-file-00000.jsonl", int64(10), uint64(7), int64(1), "a", int64(0), uint64(0), int64(0))
	f.Add("b", int64(1), uint64(1), int64(1), "b", int64(1), uint64(1), int64(1))
	f.Add("\u2028<&>\"\\", int64(-1), uint64(1), int64(1), "a\xff", int64(1), uint64(1), int64(1))
	f.Fuzz(func(t *testing.T, k1 string, s1 int64, c1 uint64, r1 int64, k2 string, s2 int64, c2 uint64, r2 int64) {
		in := []Entry{{k1, s1, c1, r1}, {k2, s2, c2, r2}}
		b, err := Encode(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Encode(%+v) failed without ErrInvalid: %v", in, err)
			}
			return
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Encode(%+v) wrote %q, which Decode refuses: %v", in, b, err)
		}
		want := slices.SortedFunc(slices.Values(in), func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
		want = slices.Compact(want)
		if !slices.Equal(got, want) {
			t.Fatalf("Encode(%+v) then Decode gave %+v, want %+v", in, got, want)
		}
	})
}
