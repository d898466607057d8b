package corpus

import (
	"context"
	"strings"
	"testing"
)

func TestCheckReportsEveryProblem(t *testing.T) {
	_, err := Options{Records: 0, Topics: 99, MinWords: 10, MaxWords: 5}.Check()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"records 0", "topics 99", "min (10) <= max (5)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	o, err := Options{Records: 10}.Check()
	if err != nil || o.Topics != 4 || o.MinWords != 20 || o.MaxWords != 120 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}

// A document depends on the seed and its index alone, not on the chunk that
// makes it.
func TestDocumentsAreAFunctionOfSeedAndIndex(t *testing.T) {
	gen := func(seed uint64, start int) []Doc {
		f := &generateFn{Records: 5000, Seed: seed, Topics: 3, MinWords: 5, MaxWords: 9}
		var docs []Doc
		if err := f.ProcessElement(context.Background(), start, func(d Doc) { docs = append(docs, d) }); err != nil {
			t.Fatal(err)
		}
		return docs
	}
	a, b := gen(7, 2000), gen(7, 2000)
	if len(a) != 2000 {
		t.Fatalf("chunk holds %d documents", len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("document %d differs between two runs", i)
		}
	}
	var sb strings.Builder
	f := &generateFn{Records: 5000, Seed: 7, Topics: 3, MinWords: 5, MaxWords: 9}
	if d := f.doc(2000, &sb); d != a[0] {
		t.Errorf("document 2000 made alone differs from the one its chunk made")
	}
	if c := gen(8, 2000); c[0] == a[0] {
		t.Error("another seed gave the same document")
	}
	last := gen(7, 4000)
	if len(last) != 1000 {
		t.Errorf("the last chunk holds %d documents, want 1000", len(last))
	}
	if err := (&generateFn{Records: 10}).ProcessElement(context.Background(), 10, func(Doc) {}); err == nil {
		t.Error("a chunk past the end was accepted")
	}
	for _, d := range a {
		if d.Words < 5 || d.Words > 9 || len(strings.Fields(d.Text)) != d.Words || !strings.HasPrefix(Destination(d), "topic=") {
			t.Fatalf("bad document %+v", d)
		}
	}
}
