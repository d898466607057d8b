package format

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// registry holds the implementations of one kind (formats, codecs) by name,
// for a Config to pick. Registration is a program's set-up, done in init
// functions; lookups come from workers at any time.
type registry[T any] struct {
	kind  string // "format", "codec": for messages
	field string // the Config field that names one: "Format", "Compression"
	fn    string // the function that registers one: "format.Register"

	mu sync.RWMutex
	m  map[string]T
}

// register adds v under name. It panics if name is empty or taken, or v is
// nil: a programmer's error at start-up.
func (r *registry[T]) register(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == "" || any(v) == nil {
		panic(r.fn + ": empty name or nil " + r.kind)
	}
	if _, dup := r.m[name]; dup {
		panic(r.fn + ": " + r.kind + " " + strconv.Quote(name) + " registered twice")
	}
	if r.m == nil {
		r.m = map[string]T{}
	}
	r.m[name] = v
}

// lookup returns what name was registered with, or an error that lists the
// registered names.
func (r *registry[T]) lookup(name string) (T, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if v, ok := r.m[name]; ok {
		return v, nil
	}
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, strconv.Quote(n))
	}
	sort.Strings(names)
	var zero T
	return zero, fmt.Errorf("unknown %s %q in Config.%s (registered: %s; register others with %s in an init function)", r.field, name, r.field, strings.Join(names, ", "), r.fn)
}
