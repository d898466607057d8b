//go:build iceberg

package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/icebergtable"
	"github.com/s3once/s3once/internal/localserver"
	"github.com/s3once/s3once/pipelines/corpus"
	"github.com/s3once/s3once/sink"
)

// icebergStage is the table stage of -format iceberg: the corpus appended
// to the table lake.corpus_by_topic, partitioned by topic, its catalog a
// SQLite file in the data folder.
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
			"warehouse":             "s3://" + bucket + "/lake",
			icebergio.S3EndpointURL: endpoint,
			icebergio.S3Region:      localserver.Region,
		},
		// The credentials by the variables run exported, as a pipeline's
		// workers read them.
		CatalogSecretsEnv: map[string]string{
			icebergio.S3AccessKeyID:     localserver.AccessKeyEnv,
			icebergio.S3SecretAccessKey: localserver.SecretKeyEnv,
		},
		Table: "lake.corpus_by_topic", RunID: st.runID, Record: reflect.TypeFor[corpus.Doc](),
		// The corpus's destinations are "topic=<topic>": the table is
		// partitioned by the Topic column under that name.
		Partition: []icebergtable.PartitionField{icebergtable.Identity("Topic").As("topic")},
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
	parts, err := countPartitions(ctx, t)
	if err != nil {
		return err
	}
	what := "appended as snapshot"
	if !res.Added {
		what = "already in snapshot"
	}
	fmt.Fprintf(w, "table %s at %s: run %s %s %d (%d files); the table has %d snapshots and %d rows in %d partitions by %s (scanned with iceberg-go)\n",
		st.cfg.Table, t.Location(), st.runID, what, res.SnapshotID, res.Files, len(t.Metadata().Snapshots()), rows, parts, describeSpec(t))
	return nil
}

// describeSpec names the table's partition fields: "identity(Topic) as
// topic".
func describeSpec(t *table.Table) string {
	var fields []string
	spec := t.Spec()
	for _, f := range spec.Fields() {
		col, _ := t.Schema().FindColumnName(f.SourceID())
		fields = append(fields, fmt.Sprintf("%s(%s) as %s", f.Transform, col, f.Name))
	}
	if len(fields) == 0 {
		return "nothing"
	}
	return strings.Join(fields, ", ")
}

// countPartitions counts the partition values of the current snapshot's
// data files.
func countPartitions(ctx context.Context, t *table.Table) (int, error) {
	tasks, err := t.Scan().PlanFiles(ctx)
	if err != nil {
		return 0, fmt.Errorf("plan the table's files: %w", err)
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		seen[fmt.Sprint(task.File.Partition())] = true
	}
	return len(seen), nil
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
