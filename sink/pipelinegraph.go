package sink

import (
	"reflect"

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
	v := reflect.ValueOf(col).FieldByName("n")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*graph.Node]() || v.IsNil() {
		return false, false
	}
	return (*graph.Node)(v.UnsafePointer()).Bounded(), true
}
