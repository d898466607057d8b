package sink

import (
	"bytes"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestParquetList checks the schema of each output version's files:
// version 2 writes slices as three-level LISTs, version 1 as bare repeated
// fields.
func TestParquetList(t *testing.T) {
	for version, want := range map[int][]string{
		1: {"repeated binary Tags (STRING);", "repeated group Items {"},
		2: {"required group Tags (LIST) {\n\t\trepeated group list {\n\t\t\trequired binary element (STRING);",
			"required group Items (LIST) {\n\t\trepeated group list {\n\t\t\trequired group element {"},
	} {
		f := encodeParquet(t, version, pqEvents(5, 2))
		pf, err := parquet.OpenFile(bytes.NewReader(f), int64(len(f)))
		if err != nil {
			t.Fatal(err)
		}
		schema := pf.Schema().String()
		for _, w := range want {
			if !strings.Contains(schema, w) {
				t.Errorf("version %d: the schema does not hold %q:\n%s", version, w, schema)
			}
		}
	}
}
