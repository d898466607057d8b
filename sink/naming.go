package sink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
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
func fileKey(s settings, ext string, b *batch, file int) string {
	var k strings.Builder
	k.Grow(len(s.Prefix) + len(b.Destination) + len(b.Window) + 64)
	if s.Prefix != "" {
		k.WriteString(s.Prefix)
		k.WriteByte('/')
	}
	if b.Destination != "" {
		k.WriteString(b.Destination)
		k.WriteByte('/')
	}
	k.WriteString(b.Window)
	k.WriteString("-pane-")
	k.WriteString(strconv.FormatInt(b.Pane, 10))
	k.WriteString("-shard-")
	k.WriteString(pad5(int64(b.Shard)))
	k.WriteString("-of-")
	k.WriteString(pad5(int64(b.Shards)))
	if b.SubBatches > 1 {
		k.WriteString("-batch-")
		k.WriteString(pad(int64(b.SubBatch), 2))
		k.WriteString("-of-")
		k.WriteString(pad(int64(b.SubBatches), 2))
	}
	k.WriteString("-file-")
	k.WriteString(pad5(int64(file)))
	k.WriteString(ext)
	return k.String()
}

func pad5(n int64) string { return pad(n, 5) }

// pad writes n in decimal, zero-padded to width digits.
func pad(n int64, width int) string {
	s := strconv.FormatInt(n, 10)
	if len(s) >= width {
		return s
	}
	return strings.Repeat("0", width-len(s)) + s
}

// checkKey refuses a key S3 would refuse, or one inside the staging prefix.
func checkKey(s settings, key string) error {
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

func parseShardKey(k []byte) (shard int, destination string, err error) {
	v, n := binary.Uvarint(k)
	if n <= 0 || v > MaxShards {
		return 0, "", fmt.Errorf("malformed shard key %q", k)
	}
	return int(v), string(k[n:]), nil
}
