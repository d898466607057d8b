package sink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/s3once/s3once/internal/ownkeys"
)

// maxKeyLen is S3's limit on object keys, in bytes.
const maxKeyLen = 1024

// windowName renders a window for file names: "global" for the global
// window, else its bounds in UTC, "20240601T100000Z-20240601T110000Z"
// (milliseconds are added when a bound has them).
func windowName(w typex.Window) (string, error) {
	switch w := w.(type) {
	case window.GlobalWindow:
		return "global", nil
	case window.IntervalWindow:
		return windowTime(w.Start) + "-" + windowTime(w.End), nil
	case nil:
		return "", errors.New("element has no window")
	default:
		return "", fmt.Errorf("window type %T has no file name; use global, fixed, sliding or session windows", w)
	}
}

func windowTime(t typex.EventTime) string {
	tt := mtime.Time(t).ToTime().UTC()
	if tt.Nanosecond() == 0 {
		return tt.Format("20060102T150405Z")
	}
	return tt.Format("20060102T150405.000Z")
}

// fileKey is the key of one file:
//
//	<prefix>/<destination>/<window>-pane-<pane>-shard-<SSSSS>-of-<NNNNN>-file-<FFFFF><ext>
//
// with empty parts (and their slashes) left out. A file of a shard that was
// split into sub-batches has "-batch-<BB>-of-<MM>" after the shard's count. Every part is a function of
// the file's records, so a retry or a rerun names its files alike.
func fileKey(s folder, ext string, b *batch, file int) string {
	// The one definition of the name, which the commit stage and the sweep
	// recognise (ownkeys.IsFileName).
	return ownkeys.FileKey(s.Prefix, b.Destination, ownkeys.FileName{
		Window: b.Window, Pane: b.Pane, Shard: b.Shard, Shards: b.Shards,
		SubBatch: b.SubBatch, SubBatches: b.SubBatches, File: file, Ext: ext,
	})
}

// checkKey refuses a key S3 would refuse, or one inside the staging prefix.
func checkKey(s folder, key string) error {
	if len(key) > maxKeyLen {
		return fmt.Errorf("file key %q is %d bytes long; S3 allows %d (shorten Prefix or the destinations)", key, len(key), maxKeyLen)
	}
	if strings.HasPrefix(key, strings.TrimSuffix(s.StagingPrefix, "/")+"/") {
		return fmt.Errorf("file key %q lies under StagingPrefix %q; pick destinations outside it", key, s.StagingPrefix)
	}
	return nil
}

// shardKey is the grouping key of a record: its shard, then its destination.
func shardKey(shard int, destination string) []byte {
	k := binary.AppendUvarint(make([]byte, 0, 2+len(destination)), uint64(shard))
	return append(k, destination...)
}

// countedShardKey is the grouping key of a record under automatic sharding
// (autoshard.go): its shard, its destination's shard count, then its
// destination.
func countedShardKey(shard, count int, destination string) []byte {
	k := binary.AppendUvarint(make([]byte, 0, 4+len(destination)), uint64(shard))
	k = binary.AppendUvarint(k, uint64(count))
	return append(k, destination...)
}

// parseCountedShardKey reads countedShardKey's key.
func parseCountedShardKey(k []byte) (shard, count int, destination string, err error) {
	s, n := binary.Uvarint(k)
	if n > 0 {
		c, m := binary.Uvarint(k[n:])
		if m > 0 && c >= 1 && c <= MaxShards && s < c {
			return int(s), int(c), string(k[n+m:]), nil
		}
	}
	return 0, 0, "", fmt.Errorf("malformed shard key %q", k)
}

func parseShardKey(k []byte) (shard int, destination string, err error) {
	v, n := binary.Uvarint(k)
	if n <= 0 || v > MaxShards {
		return 0, "", fmt.Errorf("malformed shard key %q", k)
	}
	return int(v), string(k[n:]), nil
}
