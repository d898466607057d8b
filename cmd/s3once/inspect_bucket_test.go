package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// TestInspectBucket: inspect --bucket --key describes, from the bucket
// alone, an open upload with parts and side objects (the latest tail
// marked), a committed file (with a left-over upload of its key), and a
// missing key, as text and as JSON, and changes nothing in the bucket.
func TestInspectBucket(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	w, err := recoverable.NewWriter(client, recoverable.Options{PartSize: recoverable.MinPartSize, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	file := func(n int) string {
		return ownkeys.FileKey("out", "", ownkeys.FileName{Window: "global", Shard: n, Shards: 4, File: 0, Ext: ".txt"})
	}

	// An open file: one full part, then two checkpoints, each with a tail
	// in a side object.
	openKey := file(0)
	s, err := w.Open(ctx, b, openKey, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Dispose(ctx)
	s.Write(bytes.Repeat([]byte("x"), recoverable.MinPartSize+100))
	if _, err := s.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("more"))
	rr, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// A committed file, and a second attempt at it left open.
	doneKey := file(1)
	d, err := w.Open(ctx, b, doneKey, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Write([]byte("committed bytes\n"))
	cr, err := d.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := committer.New(client, committer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Commit(ctx, cr); err != nil {
		t.Fatal(err)
	}
	again, err := w.Open(ctx, b, doneKey, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Dispose(ctx)
	again.Write([]byte("other bytes\n"))
	if _, err := again.Persist(ctx); err != nil {
		t.Fatal(err)
	}

	// An open file in a destination's folder of a sink whose folder holds
	// its settings marker.
	deepKey := ownkeys.FileKey("sink", "day=1", ownkeys.FileName{Window: "global", Shard: 0, Shards: 4, File: 0, Ext: ".txt"})
	deep, err := w.Open(ctx, b, deepKey, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer deep.Dispose(ctx)
	deep.Write([]byte("deep"))
	if _, err := deep.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(ownkeys.SettingsKey("sink")), Body: strings.NewReader("settings")}); err != nil {
		t.Fatal(err)
	}

	state := func() string {
		keys := s3test.Keys(t, client, b, "")
		ups := s3test.Uploads(t, client, b)
		slices.Sort(ups)
		return fmt.Sprint(keys, ups)
	}
	before := state()
	env := []string{"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey}
	inspect := func(key string, extra ...string) result {
		t.Helper()
		args := append([]string{"inspect", "--bucket", b, "--key", key, "--s3-endpoint", srv.Endpoint(), "--path-style"}, extra...)
		r := runCmd(t, "", env, args...)
		if r.code != exitOK {
			t.Fatalf("inspect %s: exit %d: %s", key, r.code, r.stderr)
		}
		return r
	}
	report := func(key string, extra ...string) keyReport {
		t.Helper()
		r := inspect(key, append(extra, "--json")...)
		var rep keyReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		return rep
	}

	// The open file.
	rep := report(openKey)
	if rep.State != "open" || rep.Object != nil || !rep.OwnFileName || len(rep.Uploads) != 1 {
		t.Fatalf("open file: %+v", rep)
	}
	u := rep.Uploads[0]
	if u.UploadID != rr.UploadID || u.State != "open" || u.Parts.Count != rr.Parts.Count || u.Parts.Bytes != rr.Parts.Bytes || len(u.Parts.List) != u.Parts.Count {
		t.Errorf("open upload %+v; the token says %s, %d parts of %d bytes", u, rr.UploadID, rr.Parts.Count, rr.Parts.Bytes)
	}
	if u.Parts.Count == 0 || u.Parts.List[0].Size != recoverable.MinPartSize || u.Parts.List[0].CRC64NVME == "" {
		t.Errorf("parts %+v; want a full first part with its CRC64NVME", u.Parts.List)
	}
	if len(u.Side) != 2 || u.LatestTail != rr.Tail.Object {
		t.Errorf("side objects %+v, latest %q; want 2, the latest %q", u.Side, u.LatestTail, rr.Tail.Object)
	}
	// The sweep command reaches the same server when pasted.
	if !strings.Contains(rep.SweepCommand, "--prefix out/") || !strings.Contains(rep.SweepCommand, "--older-than 7d") ||
		!strings.Contains(rep.SweepCommand, "--s3-endpoint "+srv.Endpoint()+" --path-style") {
		t.Errorf("sweep command %q", rep.SweepCommand)
	}
	pasted := strings.Fields(rep.SweepCommand)
	if pasted[0] != "s3once" {
		t.Fatalf("sweep command %q", rep.SweepCommand)
	}
	if r := runCmd(t, "", env, pasted[1:]...); r.code != exitOK || !strings.Contains(r.stdout, "dry run") {
		t.Errorf("the pasted sweep command: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A key below a destination's folder: the sweep covers the sink's
	// prefix, found by its settings marker.
	if rep := report(deepKey); rep.State != "open" || !strings.Contains(rep.SweepCommand, "--prefix sink/ ") {
		t.Errorf("a key under sink/day=1/: state %s, sweep command %q", rep.State, rep.SweepCommand)
	}
	text := inspect(openKey).stdout
	t.Logf("inspect %s:\n%s", openKey, text)
	for _, want := range []string{"s3://" + b + "/" + openKey + ": open", "object: none at the key", "open uploads: 1", rr.UploadID,
		rr.Tail.Object + ": ", "(latest tail)", "resumable from a token", "no token survives; the sweep removes it",
		"s3once sweep --bucket " + b + " --prefix out/"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text does not say %q:\n%s", want, text)
		}
	}
	// A cutoff shorter than the upload's age makes it a left-over.
	if rep := report(openKey, "--older-than", "1ns"); rep.State != "left-over" || rep.Uploads[0].State != "left-over" || !strings.Contains(rep.Uploads[0].Action, "would abort") {
		t.Errorf("with a cutoff of 1ns: %+v", rep)
	}

	// The committed file, with a later attempt's upload left over.
	rep = report(doneKey)
	if rep.State != "committed" || rep.Object == nil || rep.Object.Size != cr.Size() || rep.Object.CRC64NVMEBase64 != s3call.EncodeCRC(cr.CRC()) {
		t.Fatalf("committed file: %+v (object %+v); want %d bytes, CRC64NVME %s", rep, rep.Object, cr.Size(), s3call.EncodeCRC(cr.CRC()))
	}
	if len(rep.Uploads) != 1 || rep.Uploads[0].State != "left-over" || !strings.Contains(rep.Uploads[0].Action, "never be completed") || len(rep.Uploads[0].Side) != 1 {
		t.Errorf("the committed key's uploads: %+v", rep.Uploads)
	}
	text = inspect(doneKey).stdout
	for _, want := range []string{": committed", fmt.Sprintf("object: %d bytes", cr.Size()), "CRC64NVME " + fmt.Sprintf("%016x", cr.CRC())} {
		if !strings.Contains(text, want) {
			t.Errorf("the text does not say %q:\n%s", want, text)
		}
	}
	// --upload-id selects one upload.
	if rep := report(doneKey, "--upload-id", "no-such-upload"); len(rep.Uploads) != 0 {
		t.Errorf("--upload-id of no upload: %+v", rep.Uploads)
	}

	// A missing key: neither object nor upload. A key that only starts
	// like an open one (file(0) without its extension) finds no upload.
	rep = report(file(2))
	if rep.State != "missing" || rep.Object != nil || len(rep.Uploads) != 0 {
		t.Errorf("missing key: %+v", rep)
	}
	if rep := report(strings.TrimSuffix(openKey, ".txt")); rep.State != "missing" {
		t.Errorf("a prefix of an open key: %+v", rep)
	}
	if rep := report("notes/readme.md"); rep.OwnFileName {
		t.Errorf("another tool's key counted as an s3once file name: %+v", rep)
	}
	if text := inspect(file(2)).stdout; !strings.Contains(text, ": missing") || !strings.Contains(text, "open uploads: 0") {
		t.Errorf("missing key, as text:\n%s", text)
	}

	if after := state(); after != before {
		t.Errorf("inspect changed the bucket:\nbefore %s\nafter  %s", before, after)
	}

	// Usage errors.
	for _, args := range [][]string{
		{"inspect", "--bucket", b},
		{"inspect", "--key", "k"},
		{"inspect", "--bucket", b, "--key", "k", "--base64", "AAAA"},
	} {
		if r := runCmd(t, "", env, args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, r.code, exitUsage, r.stderr)
		}
	}
}
