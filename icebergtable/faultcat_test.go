package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// faultKind is one fault the fault catalog injects into one catalog call.
type faultKind int

const (
	faultNone faultKind = iota
	// The commit is applied, then answered with an error: a 5xx, a
	// timeout, a cancelled context, a reset connection, or a conflict (a
	// catalog or client that retried a commit which had landed).
	fault5xx
	faultTimeout
	faultCanceled
	faultReset
	faultConflictAfterApply
	// The commit is refused without being applied: another writer's
	// (table.ErrCommitFailed), or a failed requirement.
	faultRefused
	faultRequirement
	// The call is delayed, then made.
	faultDelay
	// The call fails with SQLITE_BUSY without being made.
	faultBusy
	// The commit is applied, then the process kills itself with SIGKILL
	// (in a child process only).
	faultKill
)

// faultKinds are the kinds the matrix runs, in its order.
var faultKinds = []faultKind{fault5xx, faultTimeout, faultCanceled, faultReset, faultConflictAfterApply,
	faultRefused, faultRequirement, faultDelay, faultBusy, faultKill}

func (k faultKind) String() string {
	return [...]string{"none", "applied-5xx", "applied-timeout", "applied-canceled", "applied-reset", "applied-conflict",
		"refused", "requirement-failed", "delay", "sqlite-busy", "applied-kill"}[k]
}

// applied reports whether the kind makes the commit before it answers.
func (k faultKind) applied() bool {
	switch k {
	case fault5xx, faultTimeout, faultCanceled, faultReset, faultConflictAfterApply, faultKill, faultDelay:
		return true
	}
	return false
}

// onLoad reports whether the kind applies to a LoadTable: errors and
// delays do, answers about a commit do not.
func (k faultKind) onLoad() bool {
	switch k {
	case fault5xx, faultTimeout, faultCanceled, faultReset, faultDelay, faultBusy:
		return true
	}
	return false
}

// err is the error the kind answers with.
func (k faultKind) err() error {
	switch k {
	case fault5xx:
		return errors.New("catalog answered 503 Service Unavailable (injected)")
	case faultTimeout:
		return fmt.Errorf("catalog call (injected): %w", context.DeadlineExceeded)
	case faultCanceled:
		return fmt.Errorf("catalog call (injected): %w", context.Canceled)
	case faultReset:
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case faultConflictAfterApply, faultRefused:
		return fmt.Errorf("%w: the table moved (injected)", table.ErrCommitFailed)
	case faultRequirement:
		return errors.New("requirement failed: branch main has changed: expected id 1, found 2 (injected)")
	case faultBusy:
		return errors.New("database is locked (5) (SQLITE_BUSY) (injected)")
	}
	return nil
}

// faultPlan is a seeded schedule of faults: the catalog call (counted
// over LoadTable and CommitTable, from 0) each fault is injected at.
// Calls past the plan's horizon get none, so every loop ends.
type faultPlan struct {
	at    map[int]faultKind
	delay map[int]time.Duration
}

// newFaultPlan draws, from seed, a fault of kind at each of the first
// horizon calls with probability p.
func newFaultPlan(seed uint64, kind faultKind, horizon int, p float64) faultPlan {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pl := faultPlan{at: map[int]faultKind{}, delay: map[int]time.Duration{}}
	for i := range horizon {
		if rng.Float64() < p {
			pl.at[i] = kind
			pl.delay[i] = time.Duration(10+rng.IntN(150)) * time.Millisecond
		}
	}
	return pl
}

func (pl faultPlan) String() string {
	var s []string
	for i := range 64 {
		if k, ok := pl.at[i]; ok {
			s = append(s, fmt.Sprintf("%d:%v", i, k))
		}
	}
	return "[" + strings.Join(s, " ") + "]"
}

// faultState is a plan's progress, shared by every catalog that injects
// it (the pipeline's stage loads its catalog once per worker).
type faultState struct {
	mu       sync.Mutex
	plan     faultPlan
	armed    bool
	calls    int
	injected map[faultKind]int
	// kill ends the process for faultKill (a child's own SIGKILL).
	kill func()
}

func newFaultState(plan faultPlan) *faultState {
	return &faultState{plan: plan, injected: map[faultKind]int{}}
}

// next takes the next call's fault, if the kind applies to the call.
func (s *faultState) next(load bool) (faultKind, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return faultNone, 0
	}
	i := s.calls
	s.calls++
	k := s.plan.at[i]
	if k == faultNone || (load && !k.onLoad()) || (k == faultKill && s.kill == nil) {
		return faultNone, 0
	}
	s.injected[k]++
	return k, s.plan.delay[i]
}

func (s *faultState) arm() { s.mu.Lock(); s.armed = true; s.mu.Unlock() }

// counts returns how many faults of each kind were injected.
func (s *faultState) counts() map[faultKind]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[faultKind]int, len(s.injected))
	for k, n := range s.injected {
		out[k] = n
	}
	return out
}

// faultCatalog wraps any catalog and injects its state's plan into the
// calls Commit makes (LoadTable, and CommitTable through the tables it
// hands out). The tables it loads or creates commit through it.
type faultCatalog struct {
	catalog.Catalog
	st *faultState
}

func (c *faultCatalog) wrap(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c)
}

func (c *faultCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	k, d := c.st.next(true)
	switch {
	case k == faultDelay:
		time.Sleep(d) // injected latency, not synchronisation
	case k != faultNone:
		return nil, k.err()
	}
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return c.wrap(tbl), nil
}

func (c *faultCatalog) CreateTable(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	tbl, err := c.Catalog.CreateTable(ctx, ident, schema, opts...)
	if err != nil {
		return nil, err
	}
	return c.wrap(tbl), nil
}

func (c *faultCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	k, d := c.st.next(false)
	switch k {
	case faultNone:
	case faultDelay:
		time.Sleep(d) // injected latency, not synchronisation
	case faultRefused, faultRequirement, faultBusy:
		return nil, "", k.err()
	default:
		md, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, updates)
		if err != nil {
			return md, loc, err // the catalog's own answer: nothing to lie about
		}
		if k == faultKill {
			c.st.kill()
		}
		return nil, "", k.err()
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// The pipeline share loads its catalog by properties, on the worker: the
// catalog type faultCatalogType wraps the SQL catalog the other properties
// name with the fault state registered under faultPlanProp.
const (
	faultCatalogType = "s3once-fault"
	faultPlanProp    = "s3once-fault.plan"
)

var (
	faultStatesMu sync.Mutex
	faultStates   = map[string]*faultState{}
)

func registerFaultState(id string, st *faultState) func() {
	faultStatesMu.Lock()
	faultStates[id] = st
	faultStatesMu.Unlock()
	return func() {
		faultStatesMu.Lock()
		delete(faultStates, id)
		faultStatesMu.Unlock()
	}
}

func init() {
	catalog.Register(faultCatalogType, catalog.RegistrarFunc(func(ctx context.Context, name string, props iceberg.Properties) (catalog.Catalog, error) {
		faultStatesMu.Lock()
		st := faultStates[props[faultPlanProp]]
		faultStatesMu.Unlock()
		if st == nil {
			return nil, fmt.Errorf("no fault plan %q registered", props[faultPlanProp])
		}
		inner := make(map[string]string, len(props))
		for k, v := range props {
			inner[k] = v
		}
		inner["type"] = "sql"
		delete(inner, faultPlanProp)
		cat, err := catalog.Load(ctx, name, iceberg.Properties(sqliteDefaults(inner)))
		if err != nil {
			return nil, err
		}
		return &faultCatalog{Catalog: cat, st: st}, nil
	}))
}
