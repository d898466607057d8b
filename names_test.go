package s3once

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// namedFile matches a file a comment or a page names: a path ending in .go
// or .md, with an optional #anchor.
var namedFile = regexp.MustCompile("(?:^|[\\s(\\[`\"'])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-]+\\.(?:go|md))(#[a-z0-9_-]+)?")

// foreignFiles are files that comments and pages name on purpose but the
// repository does not hold: other projects' files (the code this project
// compares itself with, the runner it describes) and a benchmark run's
// output.
var foreignFiles = []string{
	"blob/blob.go", "blob/driver/driver.go", "blob/s3blob/s3blob.go", // go-cloud
	"api.go", "upload.go", "api_op_UploadObject.go", // aws-sdk-go-v2 feature/s3
	"objstore.go", "inmem.go", "testing.go", // thanos objstore
	"textio.go", "fileio/read.go", // Beam Go io
	"runners/prism/internal/worker/bundle.go", "worker.go", // Beam's prism runner
	"report.md", "bench-out/report.md", // written by a benchmark run, not kept
}

// TestNamedFilesExist fails on a file, or a section of a Markdown page,
// that a Go comment or a Markdown page of the repository names and the
// repository does not have. A bare name ("settings_marker.go") may be any
// file of that name; a path ("internal/s3call/policy.go",
// "docs/design.md#the-sink-in-depth") is taken from the repository's root,
// from the naming file's folder, or as the tail of a path the repository
// has.
func TestNamedFilesExist(t *testing.T) {
	problems, err := missingNames(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestNamedFilesCatch runs the check on a small tree with a broken name of
// each kind.
func TestNamedFilesCatch(t *testing.T) {
	repo := fstest.MapFS{
		"docs/a.md":     {Data: []byte("# Title\n\nSee `sink/write.go`, `docs/a.md#title`, docs/a.md#nowhere and DESIGN.md.\n")},
		"sink/write.go": {Data: []byte("package sink\n\n// Write is in write.go, beside gone.go (sink/write.go).\nconst s = \"other.go\"\n")},
	}
	problems, err := missingNames(repo)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`docs/a.md:3: names docs/a.md#nowhere: docs/a.md has no heading with anchor #nowhere`,
		`docs/a.md:3: names DESIGN.md, which the repository does not have`,
		`sink/write.go:3: names gone.go, which the repository does not have`,
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// missingNames returns one line per name in repo's Go comments and
// Markdown pages that does not resolve.
func missingNames(repo fs.FS) ([]string, error) {
	var files []string
	base := map[string]bool{}
	err := fs.WalkDir(repo, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		files = append(files, p)
		base[path.Base(p)] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	has := func(from, name string) (string, bool) {
		if !strings.Contains(name, "/") {
			if base[name] {
				return "", true
			}
		}
		for _, c := range []string{name, path.Join(path.Dir(from), name)} {
			if slices.Contains(files, c) {
				return c, true
			}
		}
		for _, f := range files {
			if strings.HasSuffix(f, "/"+name) {
				return f, true
			}
		}
		return "", false
	}
	var problems []string
	for _, f := range files {
		isGo, isMD := strings.HasSuffix(f, ".go"), strings.HasSuffix(f, ".md")
		if (!isGo && !isMD) || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		b, err := fs.ReadFile(repo, f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if isGo {
				_, comment, ok := strings.Cut(line, "//")
				if !ok || strings.Contains(line, "\"") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
					continue
				}
				line = comment
			}
			for _, m := range namedFile.FindAllStringSubmatch(line, -1) {
				name, frag := m[1], strings.TrimPrefix(m[2], "#")
				if slices.Contains(foreignFiles, name) {
					continue
				}
				target, ok := has(f, name)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s:%d: names %s, which the repository does not have", f, n, name))
					continue
				}
				if frag == "" || !strings.HasSuffix(name, ".md") || target == "" {
					continue
				}
				page, err := fs.ReadFile(repo, target)
				if err != nil {
					return nil, err
				}
				if !headingAnchors(string(page))[frag] {
					problems = append(problems, fmt.Sprintf("%s:%d: names %s#%s: %s has no heading with anchor #%s", f, n, name, frag, target, frag))
				}
			}
		}
	}
	return problems, nil
}
