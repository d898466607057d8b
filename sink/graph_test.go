package sink

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
)

// TestDoFnPayloads builds a pipeline with Write and reads what each of the
// sink's DoFns puts into the pipeline graph (the JSON Beam encodes a DoFn
// with, as a runner receives it). Encode and Batch carry only the settings
// they read, so no bucket, endpoint or credentials' names; the names go
// only where an S3 client is built (the writer and the commit stage), the
// credentials themselves nowhere, and the
// commit stage carries no format, size or checkpoint settings.
func TestDoFnPayloads(t *testing.T) {
	const (
		bucket    = "graph-bucket"
		endpoint  = "http://graph-endpoint.invalid:9000"
		keyEnv    = "GRAPH_ACCESS_KEY_ID_ENV"
		secretEnv = "GRAPH_SECRET_ACCESS_KEY_ENV"
		secret    = "graph-secret-access-key"
	)
	t.Setenv(keyEnv, "GRAPHACCESSKEYID")
	t.Setenv(secretEnv, secret)
	p, s := beam.NewPipelineWithRoot()
	cfg := Config{Bucket: bucket, Prefix: "out", Files: Files{Format: "jsonl", Compression: "gzip", Shards: 3}, Connection: Connection{Endpoint: endpoint, PathStyle: true, Credentials: Credentials{AccessKeyIDEnv: keyEnv, SecretAccessKeyEnv: secretEnv}}}
	if _, err := TryWrite(s, beam.Create(s, "a", "b"), cfg); err != nil {
		t.Fatal(err)
	}
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	payloads := map[string]map[string]any{} // DoFn type -> its JSON
	for _, e := range edges {
		if e.DoFn == nil || e.DoFn.Recv == nil {
			continue
		}
		name := reflect.TypeOf(e.DoFn.Recv).Elem().Name()
		me, err := graphx.EncodeMultiEdge(e)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		opt := me.GetFn().GetOpt()
		var m map[string]any
		if err := json.Unmarshal([]byte(opt), &m); err != nil {
			t.Fatalf("%s: %v in %s", name, err, opt)
		}
		payloads[name] = m
		carriesClient := name == "writeFilesFn" || name == "finalizingWriteFilesFn" || name == "commitFn" || name == "barrierFn" ||
			name == "windowDoneFn" || name == "windowExpiryFn" || name == "markerFn"
		for _, v := range []string{bucket, endpoint, keyEnv, secretEnv} {
			if has := strings.Contains(opt, v); has != carriesClient {
				t.Errorf("%s's payload holds %q: %v, want %v; payload %s", name, v, has, carriesClient, opt)
			}
		}
		for _, v := range []string{"GRAPHACCESSKEYID", secret} {
			if strings.Contains(opt, v) {
				t.Errorf("%s's payload holds the credential %q: %s", name, v, opt)
			}
		}
	}
	want := map[string][]string{
		"encodeFn": {"destKind", "format", "maxFileBytes", "outputVersion", "pack", "shards"},
		"batchFn":  {"maxBatchBytes", "maxWorkerMemory", "shards"},
	}
	for name, keys := range want {
		m, ok := payloads[name]
		if !ok {
			t.Fatalf("no %s in the graph (found %v)", name, slices.Sorted(maps.Keys(payloads)))
		}
		if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, keys) {
			t.Errorf("%s carries %v, want %v", name, got, keys)
		}
	}
	// Encode picks the shard hash by the output version, resolved to the
	// latest for a Config that leaves it 0.
	if v := payloads["encodeFn"]["outputVersion"]; v != float64(LatestOutputVersion) {
		t.Errorf("encodeFn carries output version %v, want %d", v, LatestOutputVersion)
	}
	settingsOf := func(name string) map[string]any {
		m, ok := payloads[name]
		if !ok {
			t.Fatalf("no %s in the graph (found %v)", name, slices.Sorted(maps.Keys(payloads)))
		}
		s, ok := m["s"].(map[string]any)
		if !ok {
			t.Fatalf("%s has no settings: %v", name, m)
		}
		return s
	}
	w := settingsOf("writeFilesFn")
	for _, k := range []string{"shards", "maxBatchBytes", "finalizeCommit"} {
		if _, ok := w[k]; ok {
			t.Errorf("the writer carries %s, which it does not read", k)
		}
	}
	for _, k := range []string{"format", "compression", "maxFileBytes", "checkpointBytes", "credentials"} {
		if _, ok := w[k]; !ok {
			t.Errorf("the writer lacks %s: %v", k, w)
		}
	}
	c := settingsOf("commitFn")
	for _, k := range []string{"format", "compression", "shards", "maxBatchBytes", "maxFileBytes", "checkpointBytes", "resumeDelay", "finalizeCommit"} {
		if _, ok := c[k]; ok {
			t.Errorf("the commit stage carries %s, which it does not read", k)
		}
	}
	for _, k := range []string{"bucket", "prefix", "stagingPrefix", "endpoint", "credentials"} {
		if _, ok := c[k]; !ok {
			t.Errorf("the commit stage lacks %s: %v", k, c)
		}
	}
}
