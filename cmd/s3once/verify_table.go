package main

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/s3once/s3once/internal/tablemarker"
)

// kindNotInTable: a table run's committed files that no table commit
// marker records (--table-run).
const kindNotInTable = "table-run-missing"

// checkTableRun checks a table run's folder (<table location>/data/<run
// id>, --table-run): every window with committed files has the table
// stage's commit marker beside them, naming this run and as many files.
// A window without one is a run whose files never reached the table (or
// whose stage stopped before writing the marker): a rerun with the same
// run id appends them once.
func (v *verifier) checkTableRun(ctx context.Context) {
	runID := path.Base(strings.TrimSuffix(v.o.prefix, "/"))
	byWindow := map[string][]string{}
	for k, p := range v.parts {
		for _, f := range p.files {
			byWindow[k.window] = append(byWindow[k.window], f.key)
		}
	}
	windows := make([]string, 0, len(byWindow))
	for w := range byWindow {
		windows = append(windows, w)
	}
	slices.Sort(windows)
	for _, w := range windows {
		keys := byWindow[w]
		slices.Sort(keys)
		key := tablemarker.Key(v.o.prefix, w)
		bad := func(format string, args ...any) {
			v.problem(problem{Kind: kindNotInTable, Window: w, Key: key, Message: fmt.Sprintf(format, args...)})
		}
		if _, listed := v.sizes[key]; !listed {
			shown := keys[:min(3, len(keys))]
			bad("run %q: %d committed file(s) of window %s never reached the table (no commit marker s3://%s/%s), e.g. %s: rerun the run with the same run id, which appends them once",
				runID, len(keys), w, v.o.bucket, key, strings.Join(shown, ", "))
			continue
		}
		body, found, err := v.c.ReadObject(ctx, v.o.bucket, key, tablemarker.MaxBytes+1)
		if err != nil {
			v.unverified(key, fmt.Errorf("read the table commit marker (check the credentials, then run again): %w", err))
			continue
		}
		if !found {
			bad("run %q: the table commit marker s3://%s/%s was listed but is gone: run verify again", runID, v.o.bucket, key)
			continue
		}
		m, err := tablemarker.Decode(body)
		switch {
		case err != nil:
			bad("run %q: the table commit marker s3://%s/%s does not decode (%v): written by a later s3once (verify with a newer one) or damaged", runID, v.o.bucket, key, err)
		case m.RunID != runID || m.Window != w:
			bad("the table commit marker s3://%s/%s records run %q, window %s, not this folder's run %q: the folder was copied or renamed", v.o.bucket, key, m.RunID, m.Window, runID)
		case m.Files != len(keys):
			bad("run %q: snapshot %d of table %s holds %d file(s) of window %s, the folder %d: files were added or removed after the commit", runID, m.SnapshotID, m.Table, m.Files, w, len(keys))
		default:
			v.rep.TableRun = append(v.rep.TableRun, tableRunReport{Window: w, Table: m.Table, SnapshotID: m.SnapshotID, Files: m.Files})
		}
	}
}

// tableRunReport is a window of a table run that reached the table.
type tableRunReport struct {
	Window     string `json:"window"`
	Table      string `json:"table"`
	SnapshotID int64  `json:"snapshot_id"`
	Files      int    `json:"files"`
}
