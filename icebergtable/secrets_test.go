package icebergtable

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// TestCatalogSecretsStayOutOfTheGraph: a secret among the catalog
// properties, or a URL with a password, is refused while the pipeline is
// built; named through CatalogSecretsEnv (and the sink's credentials
// through sink.Credentials), it is in no DoFn's payload of a pipeline of
// sink.Write and Append, and a variable not set here fails the catalog's
// loading with [s3once:credentials-missing], naming the variable and not
// the value.
func TestCatalogSecretsStayOutOfTheGraph(t *testing.T) {
	const secret = "recognizable-secret-4b1d"
	t.Setenv("S3ONCE_TEST_LAKE_SECRET", secret)
	base := Config{CatalogName: "c", Table: "lake.events", RunID: "run-1", Record: reflect.TypeFor[event](),
		CatalogProperties: map[string]string{"type": "sql", "uri": "file:/tmp/none.db"}}

	for _, bad := range []map[string]string{
		{"type": "rest", "uri": "http://127.0.0.1:1", "credential": "id:" + secret},
		{"type": "rest", "uri": "http://127.0.0.1:1", "token": secret},
		{"type": "sql", "uri": "postgres://user:" + secret + "@127.0.0.1/db"},
		{"type": "sql", "uri": "file:/x", icebergio.S3SecretAccessKey: secret},
	} {
		cfg := base
		cfg.CatalogProperties = bad
		err := cfg.check()
		if err == nil {
			t.Errorf("properties %v were taken; want a refusal", keys(bad))
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the refusal shows the secret: %v", err)
		}
	}

	cfg := base
	cfg.CatalogSecretsEnv = map[string]string{icebergio.S3SecretAccessKey: "S3ONCE_TEST_LAKE_SECRET"}
	cfg.Sink = sink.Config{Connection: sink.Connection{Endpoint: "http://127.0.0.1:1", PathStyle: true,
		Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: "S3ONCE_TEST_LAKE_SECRET"}}}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	out := parquetSink("bucket", "lake/runs/run-1", 1)
	out.Connection = cfg.Sink.Connection
	Append(s, sink.Write(s, beam.Create(s, event{ID: 1}), out), cfg)
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	var payloads int
	for _, e := range edges {
		if e.DoFn == nil {
			continue
		}
		me, err := graphx.EncodeMultiEdge(e)
		if err != nil {
			t.Fatal(err)
		}
		payloads++
		if opt := me.GetFn().GetOpt(); strings.Contains(opt, secret) {
			t.Errorf("a DoFn's payload holds the secret: %s", opt)
		}
	}
	if payloads == 0 {
		t.Fatal("no DoFn in the graph")
	}

	cfg.CatalogSecretsEnv = map[string]string{icebergio.S3SecretAccessKey: "S3ONCE_TEST_NEVER_SET"}
	_, err = cfg.LoadCatalog(context.Background())
	if !errors.Is(err, sink.ErrCredentialsMissing) || !strings.Contains(err.Error(), "S3ONCE_TEST_NEVER_SET") {
		t.Errorf("LoadCatalog with a variable not set: %v; want ErrCredentialsMissing naming it", err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
