package icebergtable

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/sink"
)

// Config says which table a run appends to, and as which run.
type Config struct {
	// CatalogName and CatalogProperties load the catalog on the worker
	// that commits, as catalog.Load takes them: for the SQL catalog over
	// SQLite, {"type": "sql", "uri": "file:/path/catalog.db", "sql.driver":
	// "sqlite", "sql.dialect": "sqlite"}; for REST, {"type": "rest", "uri":
	// ...}; for Glue, {"type": "glue", ...}. The s3.* properties (endpoint,
	// region, credentials) reach the table's file IO.
	CatalogName       string
	CatalogProperties map[string]string
	// CatalogSecretsEnv names, for each catalog property that holds a
	// secret (an S3 secret key or session token, a REST credential or
	// token, a password), the environment variable that holds its value on
	// every machine that loads the catalog: {"s3.secret-access-key":
	// "LAKE_S3_SECRET"}. The properties travel in the pipeline graph, so
	// CatalogProperties may hold no secret (Append refuses one); the
	// variables are read where the catalog is loaded, and one that is not
	// set fails there with [s3once:credentials-missing]. On a job server,
	// set them in the workers' environment (see sink.Credentials).
	CatalogSecretsEnv map[string]string
	// Table is the table's identifier, dot-separated ("lake.events").
	Table string
	// RunID is the run's idempotency key: stable across retries and
	// reruns of the same input (a date, a batch number), never random or
	// time-based. Required.
	RunID string
	// Record is the record type the sink wrote (a struct); the table's
	// schema must be its (SchemaOf).
	Record reflect.Type
	// Partition is the table's partition spec (none: not partitioned): a
	// new table gets it, an existing one must have it. The sink's
	// Destination must then return PartitionPath(Partition, record), so
	// that each file holds one partition; a file that does not is refused.
	Partition []PartitionField
	// Sink is the sink's configuration: the stage reaches S3 with its
	// Connection and Requests (see WithS3); its other fields are not used.
	Sink sink.Config
}

// Identifier splits Table into a table.Identifier.
func (c Config) Identifier() table.Identifier { return strings.Split(c.Table, ".") }

func (c Config) check() error {
	var problems []string
	if c.Table == "" || strings.Contains(c.Table, "..") {
		problems = append(problems, fmt.Sprintf("Table %q must be a dot-separated identifier", c.Table))
	}
	if err := CheckRunID(c.RunID); err != nil {
		problems = append(problems, err.Error())
	}
	if c.Record == nil {
		problems = append(problems, "Record (the struct type the sink writes) is required")
	} else if schema, _, err := SchemaOf(c.Record); err != nil {
		problems = append(problems, err.Error())
	} else if _, err := partitionSpec(schema, c.Partition); err != nil {
		problems = append(problems, err.Error())
	}
	if len(c.CatalogProperties) == 0 {
		problems = append(problems, "CatalogProperties are required (at least the catalog's type and uri)")
	}
	problems = append(problems, secretProblems(c.CatalogProperties, c.CatalogSecretsEnv)...)
	if len(problems) > 0 {
		return fmt.Errorf("s3once iceberg: %s", strings.Join(problems, "; "))
	}
	return nil
}

// LoadCatalog loads the configured catalog, with the secrets
// CatalogSecretsEnv names read from this machine's environment. Where the
// properties do not set them, the table's file IO takes the endpoint,
// path-style addressing and region of Sink.Connection (the properties
// s3.endpoint, s3.force-virtual-addressing and s3.region), so a program
// gives them once; a SQLite catalog gets a busy timeout and WAL mode (see
// docs/engines.md, "Which catalog").
func (c Config) LoadCatalog(ctx context.Context) (catalog.Catalog, error) {
	props, err := catalogProperties(c.CatalogProperties, c.CatalogSecretsEnv)
	if err != nil {
		return nil, err
	}
	props = s3Properties(props, c.Sink.Connection)
	cat, err := catalog.Load(ctx, c.CatalogName, iceberg.Properties(sqliteDefaults(props)))
	if err != nil {
		return nil, fmt.Errorf("s3once iceberg: load the catalog %q: %w", c.CatalogName, err)
	}
	return cat, nil
}

// Append commits a run's files to the table: one snapshot per window (for
// bounded input in the global window, one per run), after every file of the
// window is committed in S3. It returns a PCollection of the Result of each
// window's commit.
//
// results is either sink.WriteWindows' windows (PCollection<WindowFiles>)
// or sink.Write's files (PCollection<FileResult>). Prefer the windows: each
// comes once per window, after the window's partition manifests are
// written, at its expiry for unbounded input, whatever the input's trigger
// and however many panes it fired (late data beyond the allowed lateness is
// dropped by Beam and counted by the sink). Files are grouped here by
// window with a GroupByKey, which fires with the input's trigger: keep the
// default trigger then (one pane per window, at its end), since a later
// pane of the same window with more files is refused as a changed run.
func Append(s beam.Scope, results beam.PCollection, cfg Config) beam.PCollection {
	out, err := tryAppend(s, results, cfg)
	if err != nil {
		panic(err) // pipeline construction: Beam's transforms panic on bad arguments
	}
	return out
}

// tryAppend is Append, returning an error for bad arguments.
func tryAppend(s beam.Scope, results beam.PCollection, cfg Config) (beam.PCollection, error) {
	s = s.Scope("icebergtable.Append")
	if err := cfg.check(); err != nil {
		return beam.PCollection{}, err
	}
	fn := appendFn{
		CatalogName: cfg.CatalogName, CatalogProperties: cfg.CatalogProperties, CatalogSecretsEnv: cfg.CatalogSecretsEnv,
		Table: cfg.Table, RunID: cfg.RunID, Record: beam.EncodedType{T: cfg.Record}, Partition: cfg.Partition,
		Connection: cfg.Sink.Connection, Requests: cfg.Sink.Requests,
	}
	switch t := results.Type().Type(); t {
	case reflect.TypeFor[sink.WindowFiles]():
		return beam.ParDo(s, &appendWindowFn{appendFn: fn}, results), nil
	case reflect.TypeFor[sink.FileResult]():
		keyed := beam.ParDo(s, keyByWindow, results)
		grouped := beam.GroupByKey(s, keyed)
		return beam.ParDo(s, &fn, grouped), nil
	default:
		return beam.PCollection{}, fmt.Errorf("s3once iceberg: Append takes sink.WriteWindows' windows or sink.Write's files, not a PCollection of %v", t)
	}
}

func keyByWindow(r sink.FileResult) (string, sink.FileResult) { return r.Window, r }

// appendFn commits each window's files.
type appendFn struct {
	CatalogName       string            `json:"catalogName"`
	CatalogProperties map[string]string `json:"catalogProperties"`
	Table             string            `json:"table"`
	RunID             string            `json:"runID"`
	Record            beam.EncodedType  `json:"record"`
	CatalogSecretsEnv map[string]string `json:"catalogSecretsEnv,omitempty"`
	Partition         []PartitionField  `json:"partition,omitempty"`
	// Connection and Requests are the sink's: the table's metadata writes
	// reach the bucket as its files did (see WithS3).
	Connection sink.Connection `json:"connection"`
	Requests   sink.Requests   `json:"requests"`

	tbl *Table
}

// withS3 is ctx carrying the sink's S3 settings, as the stage's metadata
// writes take them (WithS3).
func (f *appendFn) withS3(ctx context.Context) (context.Context, error) {
	return WithS3(ctx, sink.Config{Connection: f.Connection, Requests: f.Requests})
}

// openTables are the tables the table stage opened in this worker
// process, by the stage's payload less the run id: every bundle of a stage in a process
// commits through one Table, so its commits are serial there and each
// starts from the table as the one before left it. Windows committed by
// parallel bundles then cost one catalog commit each, where Tables of
// their own would refuse each other's commits and reload (more catalog
// calls per window, each paying the catalog's latency).
var openTables struct {
	sync.Mutex
	m map[string]*Table
}

func (f *appendFn) Setup(ctx context.Context) error {
	k := *f
	k.RunID, k.tbl = "", nil
	key, err := json.Marshal(&k)
	if err != nil {
		return err
	}
	openTables.Lock()
	defer openTables.Unlock()
	if t, ok := openTables.m[string(key)]; ok {
		f.tbl = t
		return nil
	}
	if err := f.open(ctx); err != nil {
		return err
	}
	if openTables.m == nil {
		openTables.m = map[string]*Table{}
	}
	openTables.m[string(key)] = f.tbl
	return nil
}

func (f *appendFn) open(ctx context.Context) error {
	cfg := Config{CatalogName: f.CatalogName, CatalogProperties: f.CatalogProperties, CatalogSecretsEnv: f.CatalogSecretsEnv, Table: f.Table,
		Sink: sink.Config{Connection: f.Connection}}
	ctx, err := f.withS3(ctx)
	if err != nil {
		return err
	}
	cat, err := cfg.LoadCatalog(ctx)
	if err != nil {
		return err
	}
	f.tbl, err = Open(ctx, cat, cfg.Identifier(), f.Record.T, "", f.Partition...)
	return err
}

func (f *appendFn) ProcessElement(ctx context.Context, window string, files func(*sink.FileResult) bool, emit func(Result)) error {
	var all []sink.FileResult
	var r sink.FileResult
	for files(&r) {
		all = append(all, r)
	}
	res, err := f.tbl.Commit(ctx, f.RunID, window, all)
	if err != nil {
		return err
	}
	count(ctx, res)
	emit(res)
	return nil
}

// appendWindowFn commits each complete window (sink.WindowFiles).
type appendWindowFn struct {
	appendFn
}

func (f *appendWindowFn) ProcessElement(ctx context.Context, w sink.WindowFiles, emit func(Result)) error {
	res, err := f.tbl.Commit(ctx, f.RunID, w.Window, w.Files)
	if err != nil {
		return err
	}
	count(ctx, res)
	emit(res)
	return nil
}

func init() {
	register.DoFn3x1[context.Context, sink.WindowFiles, func(Result), error](&appendWindowFn{})
	register.Function1x2(keyByWindow)
	register.DoFn4x1[context.Context, string, func(*sink.FileResult) bool, func(Result), error](&appendFn{})
	register.Emitter1[Result]()
	register.Iter1[sink.FileResult]()
	beam.RegisterType(reflect.TypeFor[Result]())
}
