package icebergtable

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// TestCommitsThroughOneTableAreSerial: eight runs committed at once
// through one Table each land in one round (none refused by another's
// commit, none reloading), one snapshot each; and two instances of the
// table stage with one payload (run ids aside) share the worker's Table,
// so parallel bundles commit as these goroutines do.
func TestCommitsThroughOneTableAreSerial(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{})
	cat := newCatalog(t, bucket)
	tbl := openByDay(t, cat)
	before := len(snapshots(t, cat))
	const runs = 8
	var wg sync.WaitGroup
	results := make([]Result, runs)
	errs := make([]error, runs)
	inputs := make([][]event, runs)
	for i := range runs {
		inputs[i] = events(1000*i, 20)
	}
	for i := range runs {
		fs := smallFiles(t, client, tbl, fmt.Sprintf("run-%d", i), inputs[i], 10, eventDay)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = tbl.Commit(ctx, fmt.Sprintf("run-%d", i), "global", fs)
		}()
	}
	wg.Wait()
	for i := range runs {
		if errs[i] != nil || !results[i].Added || results[i].Rounds != 1 {
			t.Errorf("run-%d: %+v, %v; want it added in one round", i, results[i], errs[i])
		}
	}
	if got := len(snapshots(t, cat)); got != before+runs {
		t.Errorf("%d snapshots, want %d", got, before+runs)
	}

	// The stage's instances: one Table per payload, whatever the run id.
	props, fromEnv := inGraph(catalogProps(t, bucket))
	a := &appendFn{CatalogName: "s3once-test", CatalogProperties: props, CatalogSecretsEnv: fromEnv, Table: "lake.shared", RunID: "run-a",
		Connection: testSink().Connection}
	a.Record.T = reflect.TypeFor[event]()
	b := *a
	b.RunID, b.tbl = "run-b", nil
	if err := a.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if a.tbl == nil || a.tbl != b.tbl {
		t.Errorf("two instances of one stage opened Tables %p and %p; want one, shared", a.tbl, b.tbl)
	}
	c := *a
	c.Table, c.tbl = "lake.other", nil
	if err := c.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if c.tbl == a.tbl {
		t.Error("a stage of another table got the same Table")
	}
}
