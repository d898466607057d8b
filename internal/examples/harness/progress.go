package harness

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Progress lines while a run goes on: how often the driver looks, and the
// longest silence between two lines.
const (
	progressEvery   = 5 * time.Second
	progressQuietAt = 30 * time.Second
)

// progressLine decides whether to report the files committed so far: when
// the count changed since the last line, or when the last line is
// progressQuietAt old, so that a long run (a live one waiting for its
// windows to close) never goes silent.
type progressLine struct {
	files  int
	lastAt time.Time
}

func (p *progressLine) next(name string, files int, bytes int64, elapsed time.Duration, now time.Time) (string, bool) {
	if files == p.files && now.Sub(p.lastAt) < progressQuietAt {
		return "", false
	}
	p.files, p.lastAt = files, now
	return fmt.Sprintf("s3once %s: %v: %s files committed so far (%s)", name, elapsed.Round(time.Second), Thousands(int64(files)), HumanBytes(bytes)), true
}

// reportProgress writes a progress line to w now and then until ctx ends,
// from the results collected in this process (none on remote workers: the
// lines then say how long the run has gone on).
func reportProgress(ctx context.Context, w io.Writer, name, run string) {
	began := time.Now()
	p := progressLine{lastAt: began}
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			files, bytes := committedSoFar(run)
			if line, ok := p.next(name, files, bytes, now.Sub(began), now); ok {
				fmt.Fprintln(w, line)
			}
		}
	}
}
