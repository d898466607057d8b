package icebergtable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
)

// TestCatalogTypesRegistered: every catalog type the docs offer ("sql" for
// one machine, "rest" and "glue" for clusters) is known to catalog.Load in
// any program that links this package. Each registers itself only when its
// package is imported; a type left out fails on every worker with
// ErrCatalogNotFound, whatever its properties. The loads here may fail for
// other reasons (no REST server answers on the port, no AWS region); they
// must not fail for an unknown type, which a made-up type shows they would.
func TestCatalogTypesRegistered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, typ := range []string{"sql", "rest", "glue"} {
		props := iceberg.Properties{
			"type":        typ,
			"uri":         "http://127.0.0.1:1",
			"glue.region": "us-east-1",
			"sql.dialect": "sqlite",
		}
		if typ == "sql" {
			props["uri"] = "file:" + t.TempDir() + "/catalog.db"
		}
		if _, err := catalog.Load(ctx, "lake", props); errors.Is(err, catalog.ErrCatalogNotFound) {
			t.Errorf("catalog type %q is not registered: %v", typ, err)
		}
	}
	if _, err := catalog.Load(ctx, "lake", iceberg.Properties{"type": "no-such-catalog"}); !errors.Is(err, catalog.ErrCatalogNotFound) {
		t.Errorf("an unknown catalog type loaded (err %v): the check above cannot fail", err)
	}
}
