package s3once

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"
)

// readmeMaxLines bounds the README: a newcomer's first hour, with the rest
// in docs/.
const readmeMaxLines = 250

// docPages are the pages of docs/ that the README and other pages link to
// by name; each must exist.
var docPages = []string{
	"docs/guarantees.md",
	"docs/configuration.md",
	"docs/operating.md",
	"docs/engines.md",
	"docs/design.md",
	"docs/testing.md",
}

func TestDocsLinksResolve(t *testing.T) {
	repo := os.DirFS(".")
	for _, p := range docPages {
		if _, err := fs.Stat(repo, p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	pages, err := markdownPages(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 1+len(docPages) {
		t.Fatalf("found %d pages (%v), want the README and at least %d in docs/", len(pages), pages, len(docPages))
	}
	problems, err := brokenLinks(repo, pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestReadmeFitsOnAScreenful(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move detail into docs/", n, readmeMaxLines)
	}
}

// TestLinkCheckerFindsBrokenLinks holds the checker itself to account: each
// kind of broken link is reported, and nothing else is.
func TestLinkCheckerFindsBrokenLinks(t *testing.T) {
	repo := fstest.MapFS{
		"README.md": {Data: []byte("# Title\n\n## Two `commands`\n\n## Two commands\n\n" +
			"[ok](docs/a.md) [ok](docs/a.md#the-sweep-and-its-cutoff) [ok](#two-commands) [ok](#two-commands-1)\n" +
			"[ok](https://example.com/x#y) [ok](docs/) [ok](docs/a.md \"title\")\n" +
			"[missing file](docs/b.md) [missing anchor](docs/a.md#nowhere) [missing local](#three-commands)\n" +
			"`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n" +
			"[ref]: docs/gone.md\n")},
		"docs/a.md": {Data: []byte("# A\n\n## The sweep, and its cutoff\n\n[up](../README.md#title) [out](../../x.md)\n")},
	}
	pages, err := markdownPages(repo)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "docs/a.md"}; !slices.Equal(pages, want) {
		t.Fatalf("pages %v, want %v", pages, want)
	}
	got, err := brokenLinks(repo, pages)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`README.md:9: link "docs/b.md": no such file docs/b.md`,
		`README.md:9: link "docs/a.md#nowhere": docs/a.md has no heading with anchor #nowhere`,
		`README.md:9: link "#three-commands": README.md has no heading with anchor #three-commands`,
		`README.md:15: link "docs/gone.md": no such file docs/gone.md`,
		`docs/a.md:5: link "../../x.md": leaves the repository`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAnchorSlugs(t *testing.T) {
	seen := map[string]int{}
	for _, c := range []struct{ heading, want string }{
		{"Limits and guarantees", "limits-and-guarantees"},
		{"The `_s3once_settings` marker", "the-_s3once_settings-marker"},
		{"On Flink, Spark or Dataflow", "on-flink-spark-or-dataflow"},
		{"Why?", "why"},
		{"Why?", "why-1"},
		{"[Link](x.md) text", "link-text"},
		{"**Bold** and prism's runner", "bold-and-prisms-runner"},
		{"A — dash", "a--dash"},
	} {
		if got := anchor(c.heading, seen); got != c.want {
			t.Errorf("anchor(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// markdownPages lists README.md and every page under docs/, sorted.
func markdownPages(repo fs.FS) ([]string, error) {
	pages := []string{"README.md"}
	docs, err := fs.Glob(repo, "docs/*.md")
	if err != nil {
		return nil, err
	}
	slices.Sort(docs)
	return append(pages, docs...), nil
}

var (
	inlineLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// brokenLinks returns one line per relative link or anchor in pages that
// does not resolve, as "page:line: link "target": why".
func brokenLinks(repo fs.FS, pages []string) ([]string, error) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		b, err := fs.ReadFile(repo, page)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[page] = a
		return a, nil
	}
	var problems []string
	for _, page := range pages {
		b, err := fs.ReadFile(repo, page)
		if err != nil {
			return nil, err
		}
		for _, l := range links(string(b)) {
			if scheme.MatchString(l.target) {
				continue
			}
			file, frag, _ := strings.Cut(l.target, "#")
			target := page
			if file != "" {
				target = path.Join(path.Dir(page), file)
				if target == ".." || strings.HasPrefix(target, "../") {
					problems = append(problems, fmt.Sprintf("%s:%d: link %q: leaves the repository", page, l.line, l.target))
					continue
				}
				info, err := fs.Stat(repo, target)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: link %q: no such file %s", page, l.line, l.target, target))
					continue
				}
				if info.IsDir() || !strings.HasSuffix(target, ".md") {
					if frag != "" {
						problems = append(problems, fmt.Sprintf("%s:%d: link %q: an anchor into %s, which is not a Markdown page", page, l.line, l.target, target))
					}
					continue
				}
			}
			if frag == "" {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				return nil, err
			}
			if !a[frag] {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s has no heading with anchor #%s", page, l.line, l.target, target, frag))
			}
		}
	}
	return problems, nil
}

type link struct {
	line   int
	target string
}

// links returns the targets of the inline and reference links of a page,
// outside code blocks and code spans.
func links(page string) []link {
	var out []link
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			out = append(out, link{n, m[1]})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{n, m[1]})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a
// page.
func headingAnchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if len(line)-len(text) > 6 || (text != "" && text[0] != ' ') {
			continue
		}
		out[anchor(strings.TrimSpace(text), seen)] = true
	}
	return out
}

var linkInHeading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// anchor is GitHub's slug of a heading: the rendered text, lower-cased,
// with everything but letters, digits, spaces, hyphens and underscores
// dropped and spaces made hyphens; a repeated slug gets -1, -2, ...
func anchor(heading string, seen map[string]int) string {
	text := linkInHeading.ReplaceAllString(heading, "$1")
	text = strings.NewReplacer("`", "", "**", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	slug := b.String()
	n := seen[slug]
	seen[slug] = n + 1
	if n > 0 {
		return fmt.Sprintf("%s-%d", slug, n)
	}
	return slug
}

// programMarker marks a Go block of the docs as a complete program and
// names the package that holds it, on the line before the block:
// <!-- program: pipelines/minimal -->.
var programMarker = regexp.MustCompile(`^<!-- program: ([a-z0-9/_-]+) -->$`)

// TestDocsProgramsBuild: every Go block of README.md and docs/ that is a
// complete program (it starts with "package main") is marked with the
// package that holds it (programMarker), is that package's main.go from
// its package clause on, and the package builds (go vet type-checks it).
// The package's own test runs it, so no complete program in the docs can
// drift from one that compiles and works.
func TestDocsProgramsBuild(t *testing.T) {
	repo := os.DirFS(".")
	pages, err := markdownPages(repo)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, page := range pages {
		b, err := fs.ReadFile(repo, page)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```go" {
				continue
			}
			start := i
			var block strings.Builder
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				block.WriteString(lines[i] + "\n")
			}
			if !strings.HasPrefix(block.String(), "package main\n") {
				continue
			}
			m := (func() []string {
				if start == 0 {
					return nil
				}
				return programMarker.FindStringSubmatch(strings.TrimSpace(lines[start-1]))
			})()
			if m == nil {
				t.Errorf("%s:%d: a complete program without a %q line before it", page, start+1, "<!-- program: DIR -->")
				continue
			}
			main, err := fs.ReadFile(repo, path.Join(m[1], "main.go"))
			if err != nil {
				t.Errorf("%s:%d: %v", page, start+1, err)
				continue
			}
			if at := strings.Index(string(main), "package main\n"); at < 0 || string(main[at:]) != block.String() {
				t.Errorf("%s:%d: the program is not %s/main.go's: copy the file into the page", page, start+1, m[1])
				continue
			}
			dirs = append(dirs, "./"+m[1])
		}
	}
	if len(dirs) < 2 {
		t.Fatalf("found %d marked programs (%v), want the README's and docs/engines.md's at least: the check reads the wrong pages", len(dirs), dirs)
	}
	if out, err := exec.Command("go", append([]string{"vet"}, dirs...)...).CombinedOutput(); err != nil {
		t.Errorf("go vet %v: %v\n%s", dirs, err, out)
	}
}
