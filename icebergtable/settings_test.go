package icebergtable

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// TestTableWritesCarryTheSinkSettings: the table stage, as a worker gets
// it (its DoFn's payload from the pipeline graph, decoded), writes the
// table's metadata with every request and object setting of the sink's
// Config: the expected bucket owner, SSE-KMS with its key, the storage
// class, tags, cache control, content disposition and user metadata. A
// recording server stands in for S3.
func TestTableWritesCarryTheSinkSettings(t *testing.T) {
	var mu sync.Mutex
	var puts []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			mu.Lock()
			puts = append(puts, r.Header.Clone())
			mu.Unlock()
			w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	out := sink.Config{Bucket: "lake-bucket", Prefix: "lake/runs/r1", Files: sink.Files{Format: "parquet"}, Connection: sink.Connection{Endpoint: srv.URL, Region: s3test.Region, PathStyle: true,
		Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}},
		Requests: sink.Requests{ExpectedBucketOwner: "111122223333", Encryption: sink.EncryptionSSEKMS, KMSKeyID: "alias/lake",
			StorageClass: "STANDARD_IA", Tags: map[string]string{"team": "lake"}, CacheControl: "no-cache",
			ContentDisposition: "attachment", Metadata: map[string]string{"origin": "s3once"}},
	}
	cfg := Config{CatalogName: "c", Table: "lake.events", RunID: "r1", Record: reflect.TypeFor[event](),
		CatalogProperties: map[string]string{"type": "sql", "uri": "file:/nowhere.db"}, Sink: out}
	p, s := beam.NewPipelineWithRoot()
	Append(s, sink.Write(s, beam.Create(s, event{ID: 1}), out), cfg)
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	var fn *appendFn
	for _, e := range edges {
		if e.DoFn == nil {
			continue
		}
		if _, ok := e.DoFn.Recv.(*appendFn); !ok {
			continue
		}
		me, err := graphx.EncodeMultiEdge(e)
		if err != nil {
			t.Fatal(err)
		}
		fn = new(appendFn)
		if err := json.Unmarshal([]byte(me.GetFn().GetOpt()), fn); err != nil {
			t.Fatal(err)
		}
	}
	if fn == nil {
		t.Fatal("no table stage in the graph")
	}

	ctx, err := fn.withS3(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fs, err := icebergio.LoadFS(ctx, map[string]string{icebergio.S3EndpointURL: srv.URL, icebergio.S3Region: s3test.Region}, "s3://lake-bucket/lake")
	if err != nil {
		t.Fatal(err)
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		t.Fatalf("the S3 file IO %T cannot create files", fs)
	}
	w, err := wfs.Create("s3://lake-bucket/lake/events/metadata/00001.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(`{"format-version":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(puts) == 0 {
		t.Fatal("the metadata write reached the server with no PUT")
	}
	want := map[string]string{
		"X-Amz-Expected-Bucket-Owner":                 "111122223333",
		"X-Amz-Server-Side-Encryption":                "aws:kms",
		"X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": "alias/lake",
		"X-Amz-Storage-Class":                         "STANDARD_IA",
		"X-Amz-Tagging":                               "team=lake",
		"Cache-Control":                               "no-cache",
		"Content-Disposition":                         "attachment",
		"X-Amz-Meta-Origin":                           "s3once",
	}
	for _, h := range puts {
		for k, v := range want {
			if got := h.Get(k); !strings.Contains(got, v) {
				t.Errorf("the metadata PUT carries %s %q, want %q", k, got, v)
			}
		}
	}
}
