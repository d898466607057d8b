package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// binary is the s3once command, built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "s3once-cmd-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "s3once")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build s3once: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// runCmd runs the built binary with a clean AWS environment.
func runCmd(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"AWS_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED=true",
	}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestUsageAndExitCodes(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, exitUsage, "", "Usage:"},
		{[]string{"bogus"}, exitUsage, "", `unknown command "bogus"`},
		{[]string{"help"}, exitOK, "Commands:", ""},
		{[]string{"--help"}, exitOK, "Exit codes", ""},
		{[]string{"help", "sweep"}, exitOK, "--older-than", ""},
		{[]string{"sweep", "--help"}, exitOK, "checkpoint is retained", ""},
		{[]string{"sweep", "-h"}, exitOK, "-dry-run", ""},
		{[]string{"inspect", "--help"}, exitOK, "--base64", ""},
		{[]string{"help", "verify"}, exitOK, "named like s3once's", ""},
		{[]string{"help"}, exitOK, "verify   prove", ""},
		{[]string{"sweep"}, exitUsage, "", "--bucket is required"},
		{[]string{"sweep", "--bucket", "b"}, exitUsage, "", "--prefix is required"},
		{[]string{"sweep", "--bucket", "b", "--prefix", "p"}, exitUsage, "", "--older-than is required"},
		{[]string{"sweep", "--bucket", "b", "--prefix", "p", "--older-than", "soon"}, exitUsage, "", "bad age"},
		{[]string{"sweep", "--bucket", "b", "--prefix", "p", "--older-than", "7d", "extra"}, exitUsage, "", "unexpected arguments"},
		{[]string{"sweep", "--nope"}, exitUsage, "", "not defined"},
		{[]string{"inspect", "a", "b"}, exitUsage, "", "one token at a time"},
		{[]string{"inspect", "--base64", "!!!"}, exitUsage, "", "not valid base64"},
		{[]string{"inspect", "--base64", "AAAA", "file"}, exitUsage, "", "not both"},
		{[]string{"inspect", filepath.Join(t.TempDir(), "missing")}, exitFail, "", "no such file"},
	}
	for _, c := range cases {
		r := runCmd(t, "", nil, c.args...)
		if r.code != c.code || !strings.Contains(r.stdout, c.stdout) || !strings.Contains(r.stderr, c.stderr) {
			t.Errorf("s3once %v: exit %d (want %d)\nstdout: %s\nstderr: %s", c.args, r.code, c.code, r.stdout, r.stderr)
		}
	}
}

// tokens writes a file through a real server and returns its tokens.
func tokens(t *testing.T) (recoverable.ResumeToken, recoverable.CommitToken) {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	w, err := recoverable.NewWriter(client, recoverable.Options{InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Open(ctx, b, "out/file", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Dispose(ctx)
	s.Write([]byte("hello, checkpoint"))
	rr, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte(" and the rest"))
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rr, cr
}

func TestInspect(t *testing.T) {
	rr, cr := tokens(t)
	rb, err := coder.EncodeResumeToken(rr)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := coder.EncodeCommitToken(cr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	decode := func(r result) tokenJSON {
		t.Helper()
		if r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var tj tokenJSON
		if err := json.Unmarshal([]byte(r.stdout), &tj); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, r.stdout)
		}
		return tj
	}
	checkCommit := func(tj tokenJSON) {
		t.Helper()
		if tj.Kind != "commit" || tj.Bucket != cr.Bucket || tj.Key != cr.Key || tj.UploadID != cr.UploadID ||
			tj.Size != cr.Size() || tj.CRC64NVMEBase64 != s3call.EncodeCRC(cr.CRC()) || tj.Parts.Count != cr.Parts.Count ||
			tj.SideObjectPrefix != recoverable.SideObjectPrefix(cr.StagingPrefix, cr.UploadID) || tj.EncodedBytes != len(cb) {
			t.Fatalf("commit token printed as %+v", tj)
		}
	}
	checkResume := func(tj tokenJSON) {
		t.Helper()
		if tj.Kind != "resume" || tj.UploadID != rr.UploadID || tj.Size != rr.Size() || tj.Seq != rr.Seq ||
			tj.Tail == nil || tj.Tail.Storage != "side-object" || tj.Tail.Object != rr.Tail.Object || tj.Tail.Length != rr.Tail.Len ||
			tj.CRC64NVME != fmt.Sprintf("%016x", rr.CRC()) || tj.PartSize != rr.PartSize {
			t.Fatalf("resume token printed as %+v", tj)
		}
	}

	checkCommit(decode(runCmd(t, "", nil, "inspect", write("commit.bin", cb))))
	checkResume(decode(runCmd(t, string(rb), nil, "inspect", "-")))
	checkResume(decode(runCmd(t, string(rb), nil, "inspect")))
	checkCommit(decode(runCmd(t, "", nil, "inspect", "--base64", base64.URLEncoding.EncodeToString(cb))))
	checkResume(decode(runCmd(t, "", nil, "inspect", "--base64", base64.RawStdEncoding.EncodeToString(rb))))
	// A file (or stdin) holding the base64 text of a token.
	checkCommit(decode(runCmd(t, "", nil, "inspect", write("commit.b64", []byte(base64.StdEncoding.EncodeToString(cb)+"\n")))))
	checkResume(decode(runCmd(t, "  "+base64.StdEncoding.EncodeToString(rb)+"\n", nil, "inspect", "-")))

	// Damaged tokens: exit 1 with the decoder's reason.
	bad := bytes.Clone(cb)
	bad[len(bad)/2] ^= 0x40
	if r := runCmd(t, "", nil, "inspect", write("bad.bin", bad)); r.code != exitFail || !strings.Contains(r.stderr, "checksum") {
		t.Fatalf("damaged token: exit %d: %s", r.code, r.stderr)
	}
	if r := runCmd(t, string(rb[:len(rb)-3]), nil, "inspect", "-"); r.code != exitFail || !strings.Contains(r.stderr, "resume token") {
		t.Fatalf("cut-off token: exit %d: %s", r.code, r.stderr)
	}
	if r := runCmd(t, "", nil, "inspect"); r.code != exitFail || !strings.Contains(r.stderr, "empty") {
		t.Fatalf("empty input: exit %d: %s", r.code, r.stderr)
	}
	for _, junk := range []string{"hello", "\x00\x01\x02", strings.Repeat("A", 1000)} {
		if r := runCmd(t, junk, nil, "inspect"); r.code != exitFail || !strings.Contains(r.stderr, "neither a resume nor a commit token") {
			t.Fatalf("junk %q: exit %d: %s", junk, r.code, r.stderr)
		}
	}
}

func TestSweep(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	open := func(key string) string {
		out, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: out.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 1000))})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.UploadId)
	}
	put := func(key string) {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("tail")}); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (uploads, side int) {
		u, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b})
		if err != nil {
			t.Fatal(err)
		}
		o, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String(recoverable.DefaultStagingPrefix)})
		if err != nil {
			t.Fatal(err)
		}
		return len(u.Uploads), len(o.Contents)
	}
	file := func(n int) string {
		return ownkeys.FileKey("out", "", ownkeys.FileName{Window: "global", Shard: n, Shards: 4, File: 0, Ext: ".txt"})
	}
	staleUpload := open(file(0))
	open("out/another-tool.bin") // not s3once's: never aborted
	staleSide := ownkeys.SideObjectKey(recoverable.DefaultStagingPrefix, "old", 1, "0a1b2c3d")
	put(staleSide)
	// The server's Date header has a one-second grain and may trail by up
	// to two seconds: wait long enough that 8s of age is unmistakable. The
	// new things must stay younger than 8s through the five sweeps below,
	// which on a loaded machine take seconds.
	time.Sleep(10300 * time.Millisecond)
	open(file(1))
	open("out-v2/" + path.Base(file(2))) // a sibling folder, not under out/
	youngSide := ownkeys.SideObjectKey(recoverable.DefaultStagingPrefix, "new", 1, "0a1b2c3d")
	put(youngSide)

	env := []string{
		"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey,
	}
	args := []string{"sweep", "--bucket", b, "--prefix", "out", "--older-than", "8s", "--s3-endpoint", srv.Endpoint(), "--path-style"}

	// A cutoff typo (8s, 7m for 7d) is refused without --force; so is a
	// staging prefix over the output.
	r := runCmd(t, "", env, args...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "floor") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("a cutoff under the floor: exit %d: %s", r.code, r.stderr)
	}
	r = runCmd(t, "", env, append(args, "--force", "--staging-prefix", "out/tmp")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "StagingPrefix") {
		t.Fatalf("a staging prefix over the output: exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "s3once sweep: s3once sweep") || !strings.HasPrefix(r.stderr, "s3once sweep") {
		t.Errorf("the message repeats or lacks its prefix: %s", r.stderr)
	}
	if u, s := count(); u != 4 || s != 2 {
		t.Fatalf("refused sweeps changed things: %d uploads, %d side objects", u, s)
	}
	args = append(args, "--force")

	// The human dry run says on each line what would go, and says nothing
	// of a clock skew within the Date header's grain.
	r = runCmd(t, "", env, append(args, "--dry-run")...)
	if r.code != exitOK || !strings.Contains(r.stdout, "would abort 1,") || !strings.Contains(r.stdout, "would delete 1,") ||
		!strings.Contains(r.stdout, "not s3once's 1") || strings.Contains(r.stdout, "clock is off") {
		t.Fatalf("dry run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// It lists what would go, key by key, uploads first, and nothing else.
	listed := r.stdout[strings.Index(r.stdout, "would remove:"):]
	for _, want := range []string{"upload       " + file(0) + "  upload " + staleUpload, "side object  " + staleSide} {
		if !strings.Contains(listed, want) {
			t.Errorf("the dry run does not list %q:\n%s", want, r.stdout)
		}
	}
	for _, kept := range []string{file(1), "another-tool.bin", youngSide, "out-v2/"} {
		if strings.Contains(listed, kept) {
			t.Errorf("the dry run lists %s, which stays:\n%s", kept, r.stdout)
		}
	}
	if strings.Index(listed, staleSide) < strings.Index(listed, file(0)) {
		t.Errorf("side objects listed before uploads:\n%s", listed)
	}
	// --limit bounds the list and says how many more there are.
	r = runCmd(t, "", env, append(args, "--dry-run", "--limit", "1")...)
	if r.code != exitOK || !strings.Contains(r.stdout, file(0)) || strings.Contains(r.stdout, staleSide) || !strings.Contains(r.stdout, "... and 1 more (--limit 2 lists them all)") {
		t.Errorf("--limit 1: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd(t, "", env, append(args, "--dry-run", "--limit", "0")...)
	if r.code != exitOK || strings.Contains(r.stdout, "would remove:") || !strings.Contains(r.stdout, "... and 2 more") {
		t.Errorf("--limit 0: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runCmd(t, "", env, append(args, "--dry-run", "--json")...)
	if r.code != exitOK {
		t.Fatalf("dry run: exit %d: %s", r.code, r.stderr)
	}
	var rep sweepReportJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if !rep.DryRun || rep.Uploads.Stale != 1 || rep.Uploads.Removed != 0 || rep.Uploads.Kept != 1 || rep.Uploads.NotOwn != 1 || rep.Uploads.Bytes != 1000 ||
		rep.SideObjects.Stale != 1 || rep.SideObjects.Kept != 1 || rep.OlderThanSec != 8 {
		t.Fatalf("dry-run report %+v", rep)
	}
	wantItems := []itemJSON{
		{Kind: "upload", Key: file(0), UploadID: staleUpload, Bytes: 1000},
		{Kind: "side object", Key: staleSide, Bytes: int64(len("tail"))},
	}
	if len(rep.Items) != len(wantItems) || rep.ItemsNotListed != 0 {
		t.Fatalf("dry-run items %+v (%d not listed), want %+v", rep.Items, rep.ItemsNotListed, wantItems)
	}
	for i, it := range rep.Items {
		if it.Time == nil || it.Time.IsZero() {
			t.Errorf("item %d has no time: %+v", i, it)
		}
		it.Time = nil
		if it != wantItems[i] {
			t.Errorf("item %d: %+v, want %+v", i, it, wantItems[i])
		}
	}
	if !strings.Contains(r.stderr, "warning: the cutoff is only") {
		t.Fatalf("no short-cutoff warning: %s", r.stderr)
	}
	if u, s := count(); u != 4 || s != 2 {
		t.Fatalf("dry run changed things: %d uploads, %d side objects", u, s)
	}

	r = runCmd(t, "", append(env, "AWS_REGION=us-east-1"), args...)
	if r.code != exitOK || !strings.Contains(r.stdout, "aborted 1") || !strings.Contains(r.stdout, "deleted 1") {
		t.Fatalf("sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if u, s := count(); u != 3 || s != 1 {
		t.Fatalf("after the sweep: %d uploads, %d side objects", u, s)
	}

	// A sweep that fails: exit 1.
	r = runCmd(t, "", env, "sweep", "--bucket", "no-such-bucket-here", "--prefix", "out/", "--older-than", "7d", "--s3-endpoint", srv.Endpoint(), "--path-style")
	if r.code != exitFail || !strings.Contains(r.stderr, "no-such-bucket-here") {
		t.Fatalf("missing bucket: exit %d: %s", r.code, r.stderr)
	}
	// No region and no endpoint: a usage error.
	r = runCmd(t, "", env, "sweep", "--bucket", b, "--prefix", "out/", "--older-than", "7d")
	if r.code != exitUsage || !strings.Contains(r.stderr, "region") {
		t.Fatalf("no region: exit %d: %s", r.code, r.stderr)
	}
}

func TestParseAge(t *testing.T) {
	good := map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1.5d": 36 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute, " 2s ": 2 * time.Second}
	for s, want := range good {
		if got, err := parseAge(s); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "0s", "-1h", "d", "-2d", "xd", "7days", "1e9d"} {
		if _, err := parseAge(s); err == nil {
			t.Errorf("parseAge(%q) accepted", s)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false)
	p.period = 0
	p.update(committer.SweepReport{Uploads: committer.SweepCounts{Scanned: 5, Stale: 2, Removed: 1}})
	p.done()
	if !strings.Contains(buf.String(), "uploads 5 scanned, 2 stale, 1 aborted") || !strings.HasSuffix(buf.String(), "\n") {
		t.Fatalf("progress line %q", buf.String())
	}
	buf.Reset()
	p = newProgress(&buf, false)
	if p.period != time.Second {
		t.Fatalf("progress period %v, want a line a second", p.period)
	}
	// A sweep shorter than the period prints nothing (an hour, so that a
	// loaded machine cannot make this sweep a long one).
	p.period = time.Hour
	p.update(committer.SweepReport{})
	p.done()
	if buf.Len() != 0 {
		t.Fatalf("short sweep printed %q", buf.String())
	}
	if got := humanBytes(1536); got != "1.5 KiB" {
		t.Fatalf("humanBytes(1536) = %q", got)
	}
}
