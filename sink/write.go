package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamruntime "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/s3once/s3once/format"
)

func init() {
	register.DoFn5x1[context.Context, beam.Window, beam.EventTime, beam.T, func(beam.EventTime, []byte, []byte), error](&encodeFn{})
	register.Emitter3[beam.EventTime, []byte, []byte]()
	register.DoFn6x1[context.Context, beam.PaneInfo, beam.Window, []byte, func(*[]byte) bool, func(batch), error](&batchFn{})
	register.Iter1[[]byte]()
	exec.RegisterEmitter(reflect.TypeFor[func(batch)](), newBatchEmitter)
	register.DoFn4x2[context.Context, *sdf.LockRTracker, batch, func(pendingFile), sdf.ProcessContinuation, error](&writeFilesFn{})
	register.DoFn5x2[context.Context, beam.BundleFinalization, *sdf.LockRTracker, batch, func(pendingFile), sdf.ProcessContinuation, error](&finalizingWriteFilesFn{})
	register.Emitter1[pendingFile]()
	register.DoFn3x1[context.Context, pendingFile, func(FileResult), error](&commitFn{})
	register.Emitter1[FileResult]()

	beam.RegisterType(reflect.TypeFor[FileResult]())
	beam.RegisterType(reflect.TypeFor[pendingFile]())
	beam.RegisterCoder(reflect.TypeFor[batch](), encodeBatch, decodeHeldBatch)
	beam.RegisterCoder(reflect.TypeFor[restriction](), encodeRestriction, decodeRestriction)
}

// Write writes the elements of col to S3, exactly once, and returns a
// PCollection<FileResult> with one element per committed file, in the window
// its records came from; where the run-wide barrier applies (bounded input,
// no commit at bundle finalization: see the package docs, "Reruns"), in the
// global window, with the window and pane as fields. It panics if
// the configuration or the input is not valid, with TryWrite's message, the
// way beam.ParDo and the other construction functions of Beam do.
func Write(s beam.Scope, col beam.PCollection, cfg Config) beam.PCollection {
	return beam.Must(TryWrite(s, col, cfg))
}

// TryWrite is Write that returns an error instead of panicking. The error
// wraps ErrInvalidConfig when the configuration does not fit (Validate's
// problems, a Format that cannot encode col's element type, a Destination of
// the wrong type or that Beam cannot serialise, the S3 server's URL given to
// Beam's --endpoint: CheckBeamEndpoint).
func TryWrite(s beam.Scope, col beam.PCollection, cfg Config) (beam.PCollection, error) {
	files, _, err := buildWrite(s, col, cfg, false)
	return files, err
}

// WriteWindows is Write that also returns a PCollection<WindowFiles> with
// one element per window, emitted once every file of the window is
// committed and its partition manifests are written: for bounded input
// under the run-wide barrier, once per window after the whole run; for
// unbounded input, when the window expires (its end plus the allowed
// lateness), however many panes its trigger fired. A stage that must see
// a window whole, such as an Iceberg table's append, reads it. The
// elements are in the global window. It needs output version 2, whose
// manifest stage it follows; it panics as Write does.
func WriteWindows(s beam.Scope, col beam.PCollection, cfg Config) (files, windows beam.PCollection) {
	files, windows, err := TryWriteWindows(s, col, cfg)
	if err != nil {
		panic(err)
	}
	return files, windows
}

// TryWriteWindows is WriteWindows that returns an error instead of
// panicking.
func TryWriteWindows(s beam.Scope, col beam.PCollection, cfg Config) (files, windows beam.PCollection, err error) {
	return buildWrite(s, col, cfg, true)
}

// buildWrite adds Write's stages; with wantWindows, it also returns the
// manifest stage's complete windows.
func buildWrite(s beam.Scope, col beam.PCollection, cfg Config, wantWindows bool) (beam.PCollection, beam.PCollection, error) {
	none := beam.PCollection{}
	if err := CheckBeamEndpoint(cfg.Endpoint); err != nil {
		return none, none, err
	}
	st, err := cfg.settings()
	if err != nil {
		return none, none, err
	}
	if !s.IsValid() {
		return none, none, errors.New("s3once sink: invalid scope")
	}
	if !col.IsValid() {
		return none, none, errors.New("s3once sink: invalid input PCollection")
	}
	if typex.IsKV(col.Type()) || typex.IsCoGBK(col.Type()) {
		return none, none, fmt.Errorf("%w: the input holds %v; Write takes single values (format the key into the value first)", ErrInvalidConfig, col.Type())
	}
	elemT := col.Type().Type()
	recFormat, err := format.Lookup(st.Format)
	if err != nil {
		return none, none, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if tc, ok := recFormat.(format.TypeChecker); ok {
		if err := tc.CheckType(elemT); err != nil {
			return none, none, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	st.bindParquetRow(elemT)
	if _, err := st.parquetRowType(); st.Parquet != nil && err != nil {
		return none, none, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	kind, err := destinationKind(cfg.Destination, elemT)
	if err != nil {
		return none, none, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	var dest *beam.EncodedFunc
	if cfg.Destination != nil {
		if err := checkTopLevel(cfg.Destination); err != nil {
			return none, none, fmt.Errorf("%w: Destination %w", ErrInvalidConfig, err)
		}
		if err := checkResolvable(cfg.Destination); err != nil {
			return none, none, fmt.Errorf("%w: Destination %w", ErrInvalidConfig, err)
		}
		ef := &beam.EncodedFunc{Fn: reflectx.MakeFunc(cfg.Destination)}
		if _, err := json.Marshal(ef); err != nil {
			return none, none, fmt.Errorf("%w: Destination cannot be serialised for the workers (use a top-level function registered with the register package): %w", ErrInvalidConfig, err)
		}
		dest = ef
	}

	auto := st.TargetFileBytes > 0
	if auto {
		if why := autoShardingFits(s, col); why != "" {
			return none, none, fmt.Errorf("%w: TargetFileBytes (automatic sharding) cannot run on this input: %s; set Shards instead", ErrInvalidConfig, why)
		}
	}
	if err := claimFolders(s, st); err != nil {
		return none, none, err
	}
	s = s.Scope("s3once.Write")
	encode := newEncodeFn(st, kind, dest, packable(col))
	if auto {
		encode.Shards = autoJoinBuckets // autoshard.go
	}
	keyed, err := single(beam.TryParDo(s.Scope("Encode"), encode, col))
	if err != nil {
		return none, none, err
	}
	if auto {
		if keyed, err = withAutoShards(s, st, keyed); err != nil {
			return none, none, err
		}
	}
	grouped, err := beam.TryGroupByKey(s.Scope("Group"), keyed)
	if err != nil {
		return none, none, fmt.Errorf("s3once sink: %w", err)
	}
	batches, err := single(beam.TryParDo(s.Scope("Batch"), newBatchFn(st), grouped))
	if err != nil {
		return none, none, err
	}
	// Each DoFn carries only the settings it reads (see settings). The
	// folder's settings marker (settings_marker.go) is judged, and written in a
	// new folder, before any commit: by the barrier where it applies, by the
	// commit stage elsewhere, and first by the writer that commits at
	// bundle finalization.
	marker := encodeSettings(st.markerSettings())
	var writer any = &writeFilesFn{S: st.writerSettings}
	if st.FinalizeCommit == FinalizeAlways {
		writer = &finalizingWriteFilesFn{writeFilesFn: writeFilesFn{S: st.writerSettings}, Settings: marker, Ext: st.fileExt()}
	}
	pending, err := single(beam.TryParDo(s.Scope("WriteFiles"), writer, batches))
	if err != nil {
		return none, none, err
	}
	applies, why := barrierApplies(st, s, col)
	if !applies && st.OutputVersion < 2 {
		// Without the barrier, only a partition's manifest closes it.
		return none, none, fmt.Errorf("%w: output version 1 keeps no partition manifests, and here %s, so nothing would keep a changed rerun's files out of the partitions it commits to; write output version 2 (OutputVersion 0 or 2, in a fresh Prefix), or give Write bounded input", ErrInvalidConfig, why)
	}
	logGuarantee(st, applies, why) // barrier.go
	commit := &commitFn{S: st.folder}
	if applies {
		if pending, err = withBarrier(s, st, pending, marker, st.fileExt()); err != nil {
			return none, none, err
		}
	} else {
		commit.Settings, commit.Manifests, commit.Ext, commit.Markers = marker, st.OutputVersion >= 2, st.fileExt(), true
	}
	shuffled, err := beam.TryReshuffle(s.Scope("Reshuffle"), pending)
	if err != nil {
		return none, none, fmt.Errorf("s3once sink: %w", err)
	}
	files, err := single(beam.TryParDo(s.Scope("Commit"), commit, shuffled))
	if err != nil {
		return none, none, err
	}
	var windows beam.PCollection
	if st.OutputVersion >= 2 {
		lateness := time.Duration(col.WindowingStrategy().AllowedLateness) * time.Millisecond
		windows, err = withManifests(s, files, st, applies, lateness) // manifests.go
	} else {
		if wantWindows {
			return none, none, fmt.Errorf("%w: WriteWindows follows the partition manifests of output version 2; this folder is of output version %d (use Write)", ErrInvalidConfig, st.OutputVersion)
		}
		err = withMarkers(s, files, st) // completion_marker.go
	}
	if err != nil {
		return none, none, err
	}
	return files, windows, nil
}

// checkTopLevel refuses function literals and method values: Beam sends a
// function to workers by its name, so what a closure captured, or a method
// value's receiver, would be lost.
func checkTopLevel(fn any) error {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	if f == nil {
		return errors.New("cannot be serialised for the workers: it has no name")
	}
	name := f.Name()
	for _, part := range strings.Split(name[strings.LastIndex(name, "/")+1:], ".") {
		if strings.HasSuffix(part, "-fm") || (strings.HasPrefix(part, "func") && strings.Trim(part[4:], "0123456789") == "" && len(part) > 4) {
			return fmt.Errorf("cannot be serialised for the workers: %s is a function literal or a method value; use a top-level function registered with the register package", name)
		}
	}
	return nil
}

// checkResolvable makes sure the workers will find fn by its name: it is
// registered, or this binary (which the workers run too) can look it up in
// its symbol table. A binary built with -ldflags=-s has none, and the job
// would otherwise fail on its workers, after the runner started.
func checkResolvable(fn any) error {
	name := reflectx.FunctionName(fn)
	if _, err := beamruntime.ResolveFunction(name, reflect.TypeOf(fn)); err != nil {
		return fmt.Errorf("%s is not registered, and this binary cannot find it by name (its symbol table was stripped, as -ldflags=-s does): register it in an init function with the register package (register.Function1x1 and the like): %w", name, err)
	}
	return nil
}

func single(cols []beam.PCollection, err error) (beam.PCollection, error) {
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("s3once sink: %w", err)
	}
	if len(cols) != 1 {
		return beam.PCollection{}, fmt.Errorf("s3once sink: internal: %d outputs, want 1", len(cols))
	}
	return cols[0], nil
}
