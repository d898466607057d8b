package sink

import (
	"reflect"
	"unsafe"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
)

// What the sink reads of the pipeline under construction that Beam Go does
// not export: which pipeline a scope belongs to, and whether a PCollection is
// bounded. Both are read from the unexported fields of beam.Scope (its graph)
// and beam.PCollection (its node), checked by name and type; if a future Beam
// renames them, the readers answer "unknown" (nil, false) and the checks that
// rely on them are skipped rather than guessed.

// pipelineOf returns the graph of the pipeline s belongs to, or nil when it
// cannot tell.
func pipelineOf(s beam.Scope) *graph.Graph {
	v := reflect.ValueOf(s).FieldByName("real")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*graph.Graph]() || v.IsNil() {
		return nil
	}
	return (*graph.Graph)(v.UnsafePointer())
}

// isBounded reports whether col is bounded; known is false when it cannot
// tell.
func isBounded(col beam.PCollection) (bounded, known bool) {
	n := nodeOf(col)
	if n == nil {
		return false, false
	}
	return n.Bounded(), true
}

// effectivelyBounded reports whether col, in the pipeline of s, holds
// finitely many elements: Beam marks it bounded, or every DoFn upstream of
// it that made Beam mark a collection unbounded (one whose ProcessElement
// returns a ProcessContinuation) is one of this package's writers over
// input that is itself effectively bounded. A writer returns a
// ProcessContinuation to checkpoint itself, yet its restriction (a batch's
// records) is finite, so a second sink that reads the first one's
// FileResults gets the run-wide barrier too. Any other such DoFn (an
// unbounded source such as periodic.Impulse, a splittable reader), a
// cross-language transform, or a collection whose producer cannot be found
// keeps col unbounded. known is false when the graph cannot be read.
func effectivelyBounded(s beam.Scope, col beam.PCollection) (bounded, known bool) {
	n := nodeOf(col)
	if n == nil {
		return false, false
	}
	if n.Bounded() {
		return true, true
	}
	edges := edgesOf(pipelineOf(s))
	if edges == nil {
		return false, true
	}
	producer := map[*graph.Node]*graph.MultiEdge{}
	for _, e := range edges {
		for _, o := range e.Output {
			producer[o.To] = e
		}
	}
	seen := map[*graph.Node]bool{}
	var finite func(n *graph.Node) bool
	finite = func(n *graph.Node) bool {
		if n.Bounded() || seen[n] {
			return true // a node seen before is judged where it was first met
		}
		seen[n] = true
		e := producer[n]
		if e == nil {
			return false
		}
		if e.Op == graph.External {
			return false // an external transform's boundedness is its own
		}
		if e.DoFn != nil {
			if _, continues := e.DoFn.ProcessElementFn().ProcessContinuation(); continues && !isOwnWriter(e.DoFn) {
				return false
			}
		}
		for _, in := range e.Input {
			if !finite(in.From) {
				return false
			}
		}
		return true
	}
	return finite(n), true
}

// isOwnWriter tells whether fn is one of this package's splittable writers.
func isOwnWriter(fn *graph.DoFn) bool {
	switch fn.Recv.(type) {
	case *writeFilesFn, *finalizingWriteFilesFn:
		return true
	}
	return false
}

// nodeOf returns col's graph node, or nil when it cannot tell.
func nodeOf(col beam.PCollection) *graph.Node {
	v := reflect.ValueOf(col).FieldByName("n")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*graph.Node]() || v.IsNil() {
		return nil
	}
	return (*graph.Node)(v.UnsafePointer())
}

// edgesOf returns the edges of g so far, or nil when it cannot tell.
func edgesOf(g *graph.Graph) []*graph.MultiEdge {
	if g == nil {
		return nil
	}
	v := reflect.ValueOf(g).Elem().FieldByName("edges")
	if !v.IsValid() || v.Type() != reflect.TypeFor[[]*graph.MultiEdge]() {
		return nil
	}
	return *(*[]*graph.MultiEdge)(unsafe.Pointer(v.UnsafeAddr()))
}
