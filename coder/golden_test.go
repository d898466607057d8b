package coder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/s3once/s3once/recoverable"
)

// -update rewrites testdata/ from the fixtures. Only ever run it to ADD the files
// of a new version: the files of a released version are the proof that old
// checkpoints still decode, and must never change.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the fixtures")

func goldenPath(kind, name string) string {
	return filepath.Join("testdata", kind+"_v1_"+name+".bin")
}

// readGolden returns a golden file, first writing it from want when -update is set.
func readGolden(t *testing.T, path string, want []byte) []byte {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return loadGolden(t, path)
}

func loadGolden(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the tests with -update once to create it)", err)
	}
	return b
}

func TestGoldenResume(t *testing.T) {
	for _, c := range resumeCases() {
		t.Run(c.name, func(t *testing.T) {
			enc, err := EncodeResumeToken(c.token)
			if err != nil {
				t.Fatalf("EncodeResumeToken: %v", err)
			}
			golden := readGolden(t, goldenPath("resume", c.name), enc)
			got, err := DecodeResumeToken(golden)
			if err != nil {
				t.Fatalf("DecodeResumeToken(golden): %v", err)
			}
			if !reflect.DeepEqual(got, c.token) {
				t.Errorf("golden decodes to\n%+v\nwant\n%+v", got, c.token)
			}
			if !bytes.Equal(enc, golden) {
				t.Errorf("the encoding changed; a released version's bytes must never change:\ngot  %x\nwant %x", enc, golden)
			}
		})
	}
}

func TestGoldenCommit(t *testing.T) {
	for _, c := range commitCases() {
		t.Run(c.name, func(t *testing.T) {
			enc, err := EncodeCommitToken(c.token)
			if err != nil {
				t.Fatalf("EncodeCommitToken: %v", err)
			}
			golden := readGolden(t, goldenPath("commit", c.name), enc)
			got, err := DecodeCommitToken(golden)
			if err != nil {
				t.Fatalf("DecodeCommitToken(golden): %v", err)
			}
			if !reflect.DeepEqual(got, c.token) {
				t.Errorf("golden decodes to\n%+v\nwant\n%+v", got, c.token)
			}
			if !bytes.Equal(enc, golden) {
				t.Errorf("the encoding changed; a released version's bytes must never change:\ngot  %x\nwant %x", enc, golden)
			}
		})
	}
}

// TestGoldenFilesAllKnown fails on a file in testdata/ that no fixture checks.
func TestGoldenFilesAllKnown(t *testing.T) {
	known := map[string]bool{}
	for _, c := range resumeCases() {
		known[goldenPath("resume", c.name)] = true
	}
	for _, c := range commitCases() {
		known[goldenPath("commit", c.name)] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !known[f] {
			t.Errorf("%s is checked by no fixture", f)
		}
	}
}

// TestCommitLayoutByHand writes a commit token byte by byte as FORMAT.md
// describes it, without the package's encoder, and checks that the package
// agrees.
func TestCommitLayoutByHand(t *testing.T) {
	var p []byte
	for _, s := range []string{"bkt", "a/b.txt", "upload-1", ".stage/"} {
		p = append(p, byte(len(s))) // uvarint length, one byte below 128
		p = append(p, s...)
	}
	p = append(p, 0, 0, 0x27, 0x10) // Parts.Count = 10000
	p = append(p, 0, 0, 0, 0, 0, 0, 0x30, 0x39)
	for i := range 32 {
		p = append(p, byte(i)) // Parts.Digest
	}
	p = append(p, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef) // Parts.CRC
	b := []byte("S3OC")
	b = append(b, 1, 0, 0, 0, byte(len(p)))
	b = append(b, p...)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))

	want := recoverable.CommitToken{
		Bucket: "bkt", Key: "a/b.txt", UploadID: "upload-1", StagingPrefix: ".stage/",
		Parts: recoverable.PartList{Count: 10000, Bytes: 12345, CRC: 0x0123456789abcdef},
	}
	for i := range want.Parts.Digest {
		want.Parts.Digest[i] = byte(i)
	}
	got, err := DecodeCommitToken(b)
	if err != nil {
		t.Fatalf("DecodeCommitToken: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	enc, err := EncodeCommitToken(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b) {
		t.Errorf("EncodeCommitToken:\ngot  %x\nwant %x", enc, b)
	}
}

// withVersion returns golden with its version byte replaced and its checksum
// recomputed by hand: a well-formed token of another version.
func withVersion(golden []byte, v byte) []byte {
	b := bytes.Clone(golden[:len(golden)-4])
	b[4] = v
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func TestFutureVersion(t *testing.T) {
	resume := loadGolden(t, goldenPath("resume", "side_object"))
	commit := loadGolden(t, goldenPath("commit", "three_parts"))
	for _, v := range []byte{2, 255, 0} {
		_, errR := DecodeResumeToken(withVersion(resume, v))
		_, errC := DecodeCommitToken(withVersion(commit, v))
		for _, err := range []error{errR, errC} {
			if !errors.Is(err, ErrVersion) || !errors.Is(err, recoverable.ErrInvalidToken) {
				t.Fatalf("version %d: got %v, want ErrVersion and ErrInvalidToken", v, err)
			}
			var ve *VersionError
			if !errors.As(err, &ve) || ve.Got != v || ve.Max != 1 {
				t.Fatalf("version %d: got %#v, want a *VersionError{Got: %d, Max: 1}", v, err, v)
			}
			if v == 2 && !strings.Contains(err.Error(), "version 2") {
				t.Errorf("message %q does not name the version found", err)
			}
			if !strings.Contains(err.Error(), "1 to 1") {
				t.Errorf("message %q does not name the versions this build reads", err)
			}
		}
	}
}
