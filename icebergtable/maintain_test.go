package icebergtable

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// A table opened for maintenance, by name and without a record type,
// expires snapshots like one Open opened, and refuses Commit; a missing
// table is not created.
func TestOpenForMaintenance(t *testing.T) {
	cat := newCatalog(t, srv.Bucket(t))
	ctx := context.Background()
	if _, err := OpenForMaintenance(ctx, cat, table.Identifier{"lake", "events"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("a missing table: %v, want catalog.ErrNoSuchTable", err)
	}
	openTable(t, cat) // creates it
	m, err := OpenForMaintenance(ctx, cat, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Commit(ctx, "run-1", "global", nil); !errors.Is(err, errMaintenanceOnly) {
		t.Errorf("Commit on a maintenance table: %v, want errMaintenanceOnly", err)
	}
	if _, err := m.ExpireSnapshots(ctx, Expiry{RetainLast: 1}); err != nil {
		t.Errorf("ExpireSnapshots on a maintenance table: %v", err)
	}
}
