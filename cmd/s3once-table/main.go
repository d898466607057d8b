// Command s3once-table maintains an Iceberg table that s3once appends to,
// beside its live writers: it compacts small files, expires old snapshots
// and removes orphan files, as icebergtable's Table.Compact,
// Table.ExpireSnapshots and Table.RemoveOrphans do (docs/engines.md,
// "Maintenance").
//
//	s3once-table compact --catalog-uri file:/var/lib/lake/catalog.db --table lake.events --id 2024-06-01T10
//	s3once-table expire --catalog-uri file:/var/lib/lake/catalog.db --table lake.events --retain-last 100 --older-than 168h
//	s3once-table remove-orphans --catalog-uri file:/var/lib/lake/catalog.db --table lake.events --older-than 72h --dry-run
//
// The catalog is a SQLite file (--catalog-uri) or any catalog iceberg-go
// loads, given by its properties (--catalog-prop type=rest
// --catalog-prop uri=https://...); secrets come from the environment
// (--catalog-secret-env s3.secret-access-key=LAKE_S3_SECRET), never from
// the command line. S3 is reached with the default AWS credential chain,
// at --s3-endpoint when set (path-style addressing).
//
// Exit status: 0 done, 1 failed (one line on standard error says why and
// what to do), 2 a usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/s3once/s3once/icebergtable"
	"github.com/s3once/s3once/sink"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// pairs is a repeatable key=value flag.
type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }
func (p pairs) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", v)
	}
	p[k] = val
	return nil
}

// list is a repeatable flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

const usage = `usage: s3once-table compact|expire|remove-orphans --table NS.TABLE (--catalog-uri URI | --catalog-prop K=V...) [flags]

  compact         rewrite each partition's small files (at least --min-files
                  under --target-bytes) into files of about --target-bytes, as
                  one snapshot, exactly once per --id: a rerun with the same id
                  finishes or finds it and adds nothing
  expire          expire snapshots older than --older-than, keeping at least
                  --retain-last (and the current one, and every branch and tag
                  head); writes the run markers that keep expired run ids
                  recognized; deletes no file
  remove-orphans  delete files under the table's location that no kept snapshot
                  references and that are older than --older-than; never
                  s3once's markers, never a run folder's files unless
                  --abandon-run names the run

flags:
`

// run is the command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "compact" && args[0] != "expire" && args[0] != "remove-orphans") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("s3once-table "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	props, secrets := pairs{}, pairs{}
	var abandon list
	tableName := fs.String("table", "", "the table, dot-separated (required)")
	catalogName := fs.String("catalog-name", "local", "the catalog's name (the SQL catalog keeps tables per name)")
	catalogURI := fs.String("catalog-uri", "", "a SQLite catalog's uri (file:/path/catalog.db); or give --catalog-prop")
	fs.Var(props, "catalog-prop", "a catalog property key=value (repeatable)")
	fs.Var(secrets, "catalog-secret-env", "property=ENV_VAR: a secret catalog property read from the environment (repeatable)")
	endpoint := fs.String("s3-endpoint", "", "S3-compatible endpoint URL; empty for AWS")
	region := fs.String("region", "", "the bucket's region (default: the AWS chain's)")
	defaultAge := 7 * 24 * time.Hour
	if cmd == "remove-orphans" {
		defaultAge = icebergtable.DefaultOrphanAge
	}
	olderThan := fs.Duration("older-than", defaultAge, "the age past which a snapshot is expired, or an orphan file deleted")
	retain := fs.Int("retain-last", 100, "expire: the number of newest snapshots of main always kept")
	dryRun := fs.Bool("dry-run", false, "remove-orphans: report, delete nothing")
	id := fs.String("id", "", "compact: the compaction's id (required; the same id on a retry)")
	target := fs.Int64("target-bytes", icebergtable.DefaultTargetFileBytes, "compact: the size compacted files are packed to")
	minFiles := fs.Int("min-files", icebergtable.DefaultMinFiles, "compact: the small files a partition needs to be compacted")
	fs.Var(&abandon, "abandon-run", "remove-orphans: a run id whose run folder's unreferenced files may go (repeatable)")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *tableName == "" || (*catalogURI == "" && len(props) == 0) {
		fmt.Fprintln(stderr, "s3once-table: give --table and the catalog (--catalog-uri, or --catalog-prop), and no other arguments")
		return 2
	}
	if cmd == "compact" && *id == "" {
		fmt.Fprintln(stderr, "s3once-table compact: give the compaction an --id (the same one when you run it again)")
		return 2
	}
	if *catalogURI != "" {
		props["type"], props["uri"] = "sql", *catalogURI
		props["sql.driver"], props["sql.dialect"] = "sqlite", "sqlite"
	}
	cfg := icebergtable.Config{CatalogName: *catalogName, CatalogProperties: props, CatalogSecretsEnv: secrets, Table: *tableName,
		Sink: sink.Config{Connection: sink.Connection{Endpoint: *endpoint, PathStyle: *endpoint != "", Region: *region}}}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "s3once-table %s: %s\n", cmd, strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	ctx, err := icebergtable.WithS3(ctx, cfg.Sink)
	if err != nil {
		return fail(err)
	}
	cat, err := cfg.LoadCatalog(ctx)
	if err != nil {
		return fail(err)
	}
	tbl, err := icebergtable.OpenForMaintenance(ctx, cat, cfg.Identifier())
	if err != nil {
		return fail(err)
	}
	switch cmd {
	case "compact":
		rep, err := tbl.Compact(ctx, icebergtable.Compaction{ID: *id, TargetFileBytes: *target, MinFiles: *minFiles})
		if err != nil {
			return fail(err)
		}
		switch {
		case rep.Landed:
			fmt.Fprintf(stdout, "compaction %s of %s had landed in snapshot %d (%d files replaced by %d); nothing done\n", *id, *tableName, rep.SnapshotID, rep.FilesRead, rep.FilesWritten)
		case rep.SnapshotID == 0:
			fmt.Fprintf(stdout, "compaction %s of %s: no partition holds %d files under %d bytes; nothing done\n", *id, *tableName, *minFiles, *target)
		default:
			fmt.Fprintf(stdout, "compaction %s of %s: %d files (%d bytes) in %d partitions replaced by %d in snapshot %d; %d rounds refused by other writers\n",
				*id, *tableName, rep.FilesRead, rep.BytesRewritten, rep.Partitions, rep.FilesWritten, rep.SnapshotID, rep.Refused)
		}
	case "expire":
		rep, err := tbl.ExpireSnapshots(ctx, icebergtable.Expiry{OlderThan: *olderThan, RetainLast: *retain})
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "expired %d snapshots of %s; %d kept; %d run markers written first\n", len(rep.Expired), *tableName, rep.Kept, rep.MarkersWritten)
	default:
		rep, err := tbl.RemoveOrphans(ctx, icebergtable.Orphans{OlderThan: *olderThan, DryRun: *dryRun, AbandonRuns: abandon})
		if err != nil {
			return fail(err)
		}
		verb := "deleted"
		if *dryRun {
			verb = "would delete"
		}
		for _, f := range rep.Deleted {
			fmt.Fprintf(stdout, "%s %s\n", verb, f)
		}
		fmt.Fprintf(stdout, "%s %d orphan files (%d bytes) of %s; %d objects listed, %d referenced; kept: %d s3once or hidden objects, %d younger than %v, %d in run folders not abandoned\n",
			verb, len(rep.Deleted), rep.DeletedBytes, *tableName, rep.Listed, rep.Referenced, rep.KeptBookkeeping, rep.KeptYoung, *olderThan, rep.KeptRunFolder)
	}
	return 0
}
