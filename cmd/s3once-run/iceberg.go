//go:build iceberg

package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/icebergtable"
	"github.com/s3once/s3once/internal/localserver"
	"github.com/s3once/s3once/pipelines/corpus"
	"github.com/s3once/s3once/sink"
)

// icebergStage is the table stage of -format iceberg: the corpus appended
// to the table lake.corpus, its catalog a SQLite file in the data folder.
type icebergStage struct {
	cfg   icebergtable.Config
	cat   catalog.Catalog
	tbl   *icebergtable.Table
	runID string
}

func openIceberg(ctx context.Context, endpoint, data, bucket string, o options) (tableStage, error) {
	st := &icebergStage{runID: fmt.Sprintf("corpus-seed-%d-records-%d", o.seed, o.records)}
	st.cfg = icebergtable.Config{
		CatalogName: "s3once-run",
		CatalogProperties: map[string]string{
			"type": "sql", "uri": "file:" + filepath.Join(data, "iceberg-catalog.db"),
			"sql.driver": "sqlite", "sql.dialect": "sqlite",
			"warehouse":                 "s3://" + bucket + "/lake",
			icebergio.S3EndpointURL:     endpoint,
			icebergio.S3Region:          localserver.Region,
			icebergio.S3AccessKeyID:     localserver.AccessKey,
			icebergio.S3SecretAccessKey: localserver.SecretKey,
		},
		Table: "lake.corpus", RunID: st.runID, Record: reflect.TypeFor[corpus.Doc](),
	}
	var err error
	if st.cat, err = st.cfg.LoadCatalog(ctx); err != nil {
		return nil, err
	}
	if st.tbl, err = icebergtable.Open(ctx, st.cat, st.cfg.Identifier(), st.cfg.Record, "", st.cfg.Partition...); err != nil {
		return nil, err
	}
	return st, nil
}

func (st *icebergStage) prefix() (string, error) {
	_, p, err := st.tbl.RunFolder(st.runID)
	return p, err
}

func (st *icebergStage) commit(ctx context.Context, w io.Writer, rs []sink.FileResult) error {
	res, err := st.tbl.Commit(ctx, st.runID, "global", rs)
	if err != nil {
		return err
	}
	t, err := st.cat.LoadTable(ctx, st.cfg.Identifier())
	if err != nil {
		return err
	}
	rows, err := countRows(ctx, t)
	if err != nil {
		return err
	}
	what := "appended as snapshot"
	if !res.Added {
		what = "already in snapshot"
	}
	fmt.Fprintf(w, "table %s at %s: run %s %s %d (%d files); the table has %d snapshots and %d rows (scanned with iceberg-go)\n",
		st.cfg.Table, t.Location(), st.runID, what, res.SnapshotID, res.Files, len(t.Metadata().Snapshots()), rows)
	return nil
}

func countRows(ctx context.Context, t *table.Table) (int64, error) {
	fields := t.Schema().Fields()
	if len(fields) == 0 {
		return 0, fmt.Errorf("scan the table: it has no columns")
	}
	at, err := t.Scan(table.WithSelectedFields(fields[0].Name)).ToArrowTable(ctx)
	if err != nil {
		return 0, fmt.Errorf("scan the table: %w", err)
	}
	defer at.Release()
	return at.NumRows(), nil
}
