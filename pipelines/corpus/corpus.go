// Package corpus generates a seeded text corpus and builds the batch example
// pipeline: documents on a handful of topics, written by sink.Write as JSON
// Lines under one folder per topic ("topic=<name>/").
//
// Document i of a corpus depends only on the seed and i, never on how the
// work is split, so two runs with the same options produce the same records,
// and (the sink being deterministic) the same files, byte for byte.
package corpus

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/s3once/s3once/internal/examples/sinkdefaults"
	"github.com/s3once/s3once/sink"
)

func init() {
	register.DoFn3x1[context.Context, int, func(Doc), error](&generateFn{})
	register.Emitter1[Doc]()
	register.Function1x1(Destination)
	beam.RegisterType(reflectDoc)
}

// Doc is one document of the corpus: one JSON line in the output.
type Doc struct {
	ID    string `json:"id"`
	Topic string `json:"topic"`
	Title string `json:"title"`
	Text  string `json:"text"`
	Words int    `json:"words"`
	// Score is a made-up relevance, for something numeric to query.
	Score float64 `json:"score"`
}

// Destination is the folder a document goes to: "topic=<topic>".
func Destination(d Doc) string { return "topic=" + d.Topic }

// Options size the corpus.
type Options struct {
	// Records is the number of documents. Required (> 0).
	Records int
	// Seed picks the corpus: equal seeds give equal documents.
	Seed uint64
	// Topics is how many topics (and so destinations) documents spread
	// over, 1 to len(Topics()). Default 4.
	Topics int
	// MinWords and MaxWords bound a document's length in words. Defaults 20
	// and 120.
	MinWords, MaxWords int
}

// Limits of Options.
const (
	MaxRecords = 100_000_000
	MaxWords   = 10_000_000
	// chunk is how many documents one generator element makes.
	chunk = 2000
)

// Check fills in defaults and reports every problem of o at once.
func (o Options) Check() (Options, error) {
	var problems []string
	if o.Records <= 0 || o.Records > MaxRecords {
		problems = append(problems, fmt.Sprintf("records %d must be in [1, %d]", o.Records, MaxRecords))
	}
	if o.Topics == 0 {
		o.Topics = 4
	}
	if o.Topics < 1 || o.Topics > len(topics) {
		problems = append(problems, fmt.Sprintf("topics %d must be in [1, %d]", o.Topics, len(topics)))
	}
	if o.MinWords == 0 {
		o.MinWords = 20
	}
	if o.MaxWords == 0 {
		o.MaxWords = max(120, o.MinWords)
	}
	if o.MinWords < 1 || o.MaxWords < o.MinWords || o.MaxWords > MaxWords {
		problems = append(problems, fmt.Sprintf("words per document must satisfy 1 <= min (%d) <= max (%d) <= %d", o.MinWords, o.MaxWords, MaxWords))
	}
	if len(problems) > 0 {
		return o, fmt.Errorf("corpus: %s", strings.Join(problems, "; "))
	}
	return o, nil
}

// Generate adds the corpus to the pipeline: a PCollection<Doc>.
func Generate(s beam.Scope, o Options) (beam.PCollection, error) {
	o, err := o.Check()
	if err != nil {
		return beam.PCollection{}, err
	}
	s = s.Scope("corpus.Generate")
	n := (o.Records + chunk - 1) / chunk
	starts := make([]int, n)
	for i := range starts {
		starts[i] = i * chunk
	}
	fn := &generateFn{Records: o.Records, Seed: o.Seed, Topics: o.Topics, MinWords: o.MinWords, MaxWords: o.MaxWords}
	return beam.ParDo(s, fn, beam.CreateList(s, starts)), nil
}

// Write builds the batch example: the corpus, written by sink.Write with one
// destination per topic, in cfg's format and compression (the example's
// defaults: "jsonl" and "gzip"). It returns the sink's PCollection<FileResult>.
func Write(s beam.Scope, o Options, cfg sink.Config) (beam.PCollection, error) {
	docs, err := Generate(s, o)
	if err != nil {
		return beam.PCollection{}, err
	}
	return sinkdefaults.Write(s, docs, cfg, Destination)
}

// Configure sets what Write sets on cfg: the example's default format
// ("jsonl") and its Destination. A program that runs sink.Preflight
// before Write calls it first, so that the preflight checks the settings
// the files are written with.
func Configure(cfg *sink.Config) { sinkdefaults.Configure(cfg, Destination) }

// generateFn makes the documents [start, start+chunk) of the corpus.
type generateFn struct {
	Records  int    `json:"records"`
	Seed     uint64 `json:"seed"`
	Topics   int    `json:"topics"`
	MinWords int    `json:"minWords"`
	MaxWords int    `json:"maxWords"`
}

func (f *generateFn) ProcessElement(ctx context.Context, start int, emit func(Doc)) error {
	if start < 0 || start >= f.Records {
		return fmt.Errorf("corpus: chunk start %d outside [0, %d)", start, f.Records)
	}
	end := min(start+chunk, f.Records)
	var sb strings.Builder
	for i := start; i < end; i++ {
		emit(f.doc(i, &sb))
	}
	return nil
}

// doc makes document i.
func (f *generateFn) doc(i int, sb *strings.Builder) Doc {
	r := rand.New(rand.NewPCG(f.Seed, uint64(i)))
	t := topics[r.IntN(f.Topics)]
	n := f.MinWords + r.IntN(f.MaxWords-f.MinWords+1)
	sb.Reset()
	for w := 0; w < n; w++ {
		if w > 0 {
			sb.WriteByte(' ')
		}
		// Two words in three come from the topic, the rest are common.
		if r.IntN(3) < 2 {
			sb.WriteString(t.words[r.IntN(len(t.words))])
		} else {
			sb.WriteString(common[r.IntN(len(common))])
		}
	}
	first := t.words[r.IntN(len(t.words))]
	title := strings.ToUpper(first[:1]) + first[1:] + " and " + t.words[r.IntN(len(t.words))]
	return Doc{
		ID:    fmt.Sprintf("doc-%09d", i),
		Topic: t.name,
		Title: title,
		Text:  sb.String(),
		Words: n,
		Score: float64(r.IntN(100000)) / 1000,
	}
}

// Topics lists the topic names, in the order Options.Topics takes them.
func Topics() []string {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.name
	}
	return names
}
