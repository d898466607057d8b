package icebergtable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The fault matrix's independent check reads the table as it is in the
// bucket: the metadata file the catalog points at (decoded here as JSON),
// every snapshot's manifest list and manifests (iceberg-go's Avro decoders,
// not its scan), and a HEAD of every data file any of them names.

// metadataFile is what the check reads of a table metadata file.
type metadataFile struct {
	CurrentSnapshotID *int64 `json:"current-snapshot-id"`
	Refs              map[string]struct {
		SnapshotID int64  `json:"snapshot-id"`
		Type       string `json:"type"`
	} `json:"refs"`
	Snapshots []struct {
		SnapshotID   int64             `json:"snapshot-id"`
		ParentID     *int64            `json:"parent-snapshot-id"`
		ManifestList string            `json:"manifest-list"`
		Summary      map[string]string `json:"summary"`
	} `json:"snapshots"`
}

// wantRun is a run the table must hold once: its id, and its data files
// (key → records) in the window "global".
type wantRun struct {
	id    string
	files map[string]int64
}

// tableReport is what the check found, for the log.
type tableReport struct {
	snapshots, ancestry, dataFiles int
	records                        int64
}

func getObject(ctx context.Context, c *s3.Client, uri string) ([]byte, error) {
	bucket, key, ok := strings.Cut(strings.TrimPrefix(uri, "s3://"), "/")
	if !ok || !strings.HasPrefix(uri, "s3://") {
		return nil, fmt.Errorf("%s: not an s3:// location", uri)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", uri, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// readMetadataFile is lake.events' current metadata file, read from the
// bucket and decoded as JSON (not through iceberg-go's table).
func readMetadataFile(ctx context.Context, c *s3.Client, cat catalog.Catalog) (metadataFile, error) {
	var md metadataFile
	tbl, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		return md, err
	}
	body, err := getObject(ctx, c, tbl.MetadataLocation())
	if err != nil {
		return md, err
	}
	if err := json.Unmarshal(body, &md); err != nil {
		return md, fmt.Errorf("metadata file %s: %w", tbl.MetadataLocation(), err)
	}
	return md, nil
}

// checkFaultTable checks the table against the runs it must hold: main's
// ancestry holds one snapshot per run (window "global") and no other; no
// data file is added by two snapshots of main's ancestry; the current
// snapshot's live entries are exactly the runs' files, each once, with
// each file's record count; every snapshot's manifest list and manifests
// are there (none removed as if its commit had failed), and so is every
// data file they name. It returns every problem found, joined.
func checkFaultTable(ctx context.Context, c *s3.Client, cat catalog.Catalog, want []wantRun) (tableReport, error) {
	var rep tableReport
	md, err := readMetadataFile(ctx, c, cat)
	if err != nil {
		return rep, err
	}
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	byID := map[int64]int{}
	for i, s := range md.Snapshots {
		byID[s.SnapshotID] = i
	}
	rep.snapshots = len(md.Snapshots)
	main, ok := md.Refs["main"]
	if !ok && md.CurrentSnapshotID != nil {
		main.SnapshotID, ok = *md.CurrentSnapshotID, true
	}
	var ancestry []int64 // newest first
	for id, seen := main.SnapshotID, map[int64]bool{}; ok; {
		i, found := byID[id]
		if !found || seen[id] {
			fail("main's ancestry reaches snapshot %d, which the metadata does not hold (or holds twice)", id)
			break
		}
		seen[id] = true
		ancestry = append(ancestry, id)
		if md.Snapshots[i].ParentID == nil {
			break
		}
		id = *md.Snapshots[i].ParentID
	}
	rep.ancestry = len(ancestry)

	// One snapshot per run and window in main's ancestry.
	perRun := map[string]int{}
	for _, id := range ancestry {
		s := md.Snapshots[byID[id]]
		perRun[s.Summary[PropRunID]+"\x00"+s.Summary[PropWindow]]++
	}
	for _, r := range want {
		if n := perRun[r.id+"\x00global"]; n != 1 {
			fail("run %q (window global) is in %d snapshots of main's ancestry, want 1", r.id, n)
		}
		delete(perRun, r.id+"\x00global")
	}
	for k, n := range perRun {
		run, window, _ := strings.Cut(k, "\x00")
		fail("main's ancestry holds %d snapshots of run %q (window %q), which no loop committed", n, run, window)
	}

	// Every snapshot's manifest list and manifests, and the data files.
	inAncestry := map[int64]bool{}
	for _, id := range ancestry {
		inAncestry[id] = true
	}
	addedBy := map[string][]int64{} // data file → snapshots of main's ancestry that added it
	live := map[string][]int64{}    // data file → record counts of the current snapshot's live entries
	referenced := map[string]bool{}
	for _, s := range md.Snapshots {
		list, err := getObject(ctx, c, s.ManifestList)
		if err != nil {
			fail("snapshot %d (run %q): its manifest list: %v", s.SnapshotID, s.Summary[PropRunID], err)
			continue
		}
		manifests, err := iceberg.ReadManifestList(bytes.NewReader(list))
		if err != nil {
			fail("snapshot %d: decode its manifest list: %v", s.SnapshotID, err)
			continue
		}
		for _, m := range manifests {
			raw, err := getObject(ctx, c, m.FilePath())
			if err != nil {
				fail("snapshot %d (run %q): manifest: %v", s.SnapshotID, s.Summary[PropRunID], err)
				continue
			}
			entries, err := iceberg.ReadManifest(m, bytes.NewReader(raw), false)
			if err != nil {
				fail("snapshot %d: decode manifest %s: %v", s.SnapshotID, m.FilePath(), err)
				continue
			}
			for _, e := range entries {
				path := e.DataFile().FilePath()
				referenced[path] = true
				if inAncestry[s.SnapshotID] && e.Status() == iceberg.EntryStatusADDED && e.SnapshotID() == s.SnapshotID {
					addedBy[path] = append(addedBy[path], s.SnapshotID)
				}
				if s.SnapshotID == main.SnapshotID && e.Status() != iceberg.EntryStatusDELETED {
					live[path] = append(live[path], e.DataFile().Count())
				}
			}
		}
	}
	for path, ids := range addedBy {
		if len(ids) > 1 {
			fail("data file %s is added by %d snapshots of main's ancestry (%v)", path, len(ids), ids)
		}
	}
	wantLive := map[string]int64{}
	for _, r := range want {
		for key, n := range r.files {
			wantLive[key] = n
		}
	}
	for path, counts := range live {
		key := path[strings.Index(path[len("s3://"):], "/")+len("s3://")+1:]
		n, ok := wantLive[key]
		switch {
		case !ok:
			fail("the current snapshot holds %s, a file of no run", path)
		case len(counts) != 1:
			fail("the current snapshot holds %s in %d live entries", path, len(counts))
		case counts[0] != n:
			fail("the current snapshot holds %s with %d records, the run wrote %d", path, counts[0], n)
		}
		rep.records += counts[0]
		delete(wantLive, key)
	}
	for key := range wantLive {
		fail("the current snapshot lacks the run's file %s", key)
	}
	rep.dataFiles = len(live)
	for _, path := range slices.Sorted(maps.Keys(referenced)) {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "s3://"), "/")
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			fail("data file %s, named by a snapshot, is gone: %v", path, err)
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return rep, errors.New(strings.Join(problems, "\n"))
	}
	return rep, nil
}
