package sink

import (
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestSmoke(t *testing.T) {
	bucket := srv.Bucket(t)
	var in []string
	for i := 0; i < 1000; i++ {
		in = append(in, fmt.Sprintf("record-%05d", i))
	}
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, "out")
	cfg.Shards = 3
	res := Write(s, beam.CreateList(s, in), cfg)
	collect(t, s, res)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	c := testClient()
	var got []string
	for k, b := range readObjects(t, c, bucket, "out/") {
		got = append(got, lines(t, k, decompress(t, k, b))...)
	}
	sameMultiset(t, got, in)
	checkClean(t, c, bucket)
	t.Logf("results: %+v", results(t))
}
