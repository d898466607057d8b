package s3once_test

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/s3once/s3once"

// testkit is the folder of the packages that exist only for tests: the
// in-memory server, fault wrappers, the stream conformance suite and the
// explorer. Production code never imports them.
const testkit = module + "/internal/testkit/"

// shipped are the programs s3once ships or documents as programs to run.
var shipped = []string{
	module + "/cmd/s3once",
	module + "/cmd/s3once-run",
	module + "/pipelines/batch",
	module + "/pipelines/streaming",
	module + "/pipelines/minimal",
}

type listed struct {
	ImportPath string
	Name       string   // the package's name: "main" for a program
	Imports    []string // of the package's non-test files
	Deps       []string
}

// goList runs `go list -json` with args and decodes its stream of objects.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list %v: decode: %v", args, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %v listed nothing", args)
	}
	return pkgs
}

// TestTestKitStaysInTests: no package outside internal/testkit/ imports a
// test-kit package from its non-test files, and no shipped program links
// one.
func TestTestKitStaysInTests(t *testing.T) {
	kit := 0
	for _, p := range goList(t, module+"/...") {
		if strings.HasPrefix(p.ImportPath, testkit) {
			kit++
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, testkit) {
				t.Errorf("%s imports the test-kit package %s outside its tests", p.ImportPath, imp)
			}
		}
	}
	if kit == 0 {
		t.Fatalf("no package under %s: the check looks in the wrong place", testkit)
	}
	for _, p := range goList(t, shipped...) {
		for _, d := range p.Deps {
			if strings.HasPrefix(d, testkit) {
				t.Errorf("the shipped program %s links the test-kit package %s", p.ImportPath, d)
			}
		}
	}
}

// TestShippedCarryNoMutants: the mutation switches exist only in builds
// with the s3once_mutant tag; shipped programs, built without it, do not link
// internal/mutant at all. With the tag they do, so the check looks at the
// right name.
func TestShippedCarryNoMutants(t *testing.T) {
	const mutant = module + "/internal/mutant"
	has := func(pkgs []listed) bool {
		for _, p := range pkgs {
			for _, d := range p.Deps {
				if d == mutant {
					return true
				}
			}
		}
		return false
	}
	if has(goList(t, shipped...)) {
		t.Errorf("a shipped program links %s without the s3once_mutant tag", mutant)
	}
	if !has(goList(t, "-tags", "s3once_mutant", module+"/cmd/s3once")) {
		t.Errorf("cmd/s3once does not link %s even with the tag: the check looks for the wrong path", mutant)
	}
}

// TestBeamOnlyThroughSink: the sink is the module's one library package
// that speaks Beam; every other library package that links Beam does so
// because it uses the sink (programs, such as the integration tests' worker
// boot program, may talk to a runner themselves). The packages the sink
// builds on (the encodings of packs, batches and tokens, the shard hash,
// the spill, the memory budget, the file bodies, the preflight's probes,
// the record formats and codecs, the stream and the committer) link no
// Beam at all, so each is tested, and read, without a runner.
func TestBeamOnlyThroughSink(t *testing.T) {
	const (
		beam = "github.com/apache/beam/"
		sink = module + "/sink"
	)
	pkgs := goList(t, module+"/...")
	byPath := map[string]listed{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	linksBeam := func(p listed) bool {
		for _, d := range p.Deps {
			if strings.HasPrefix(d, beam) {
				return true
			}
		}
		return false
	}
	for _, p := range pkgs {
		if p.Name != "main" && p.ImportPath != sink && linksBeam(p) && !slices.Contains(p.Deps, sink) {
			t.Errorf("%s links Beam without the sink: only the sink speaks Beam", p.ImportPath)
		}
	}
	s, ok := byPath[sink]
	if !ok || !linksBeam(s) {
		t.Fatalf("%s is not listed or links no Beam: the check looks in the wrong place", sink)
	}
	for _, base := range []string{"internal/pack", "internal/batchwire", "internal/shard", "internal/spill", "internal/membudget",
		"internal/filebody", "internal/parquetbody", "internal/frame", "internal/preflight", "format", "coder", "recoverable", "committer"} {
		if !slices.Contains(s.Imports, module+"/"+base) {
			t.Errorf("the sink does not import %s: the list of the packages it builds on is stale", base)
		}
		if p, ok := byPath[module+"/"+base]; !ok || linksBeam(p) {
			t.Errorf("%s links Beam (or is gone): the sink's base packages run without a runner", base)
		}
	}
}

// TestDrawnImports holds the drawing of the packages below the sink in
// docs/design.md ("Packages and what they import") over `go list`: the
// sink imports exactly the packages on its branches; each of those
// imports, of the module's packages, exactly the ones its arrow names (none
// without an arrow); a package drawn only at an arrow's head imports none;
// and every module package the sink links is drawn.
func TestDrawnImports(t *testing.T) {
	doc, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	branches, heads := parseDrawing(t, string(doc))
	pkgs := goList(t, module+"/...")
	byPath := map[string]listed{}
	for _, p := range pkgs {
		byPath[strings.TrimPrefix(p.ImportPath, module+"/")] = p
	}
	own := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				out = append(out, rest)
			}
		}
		slices.Sort(out)
		return out
	}
	sink, ok := byPath["sink"]
	if !ok {
		t.Fatal("the sink is not listed")
	}
	drawn := slices.Sorted(maps.Keys(branches))
	if got := own(sink.Imports); !slices.Equal(got, drawn) {
		t.Errorf("the sink imports %v; the drawing's branches are %v", got, drawn)
	}
	for pkg, want := range branches {
		p, ok := byPath[pkg]
		if !ok {
			t.Errorf("%s is drawn and is not a package", pkg)
			continue
		}
		slices.Sort(want)
		if got := own(p.Imports); !slices.Equal(got, want) {
			t.Errorf("%s imports %v; the drawing's arrow names %v", pkg, got, want)
		}
	}
	for pkg := range heads {
		if _, ok := branches[pkg]; ok {
			continue
		}
		if got := own(byPath[pkg].Imports); len(got) > 0 {
			t.Errorf("%s is drawn only at an arrow's head and imports %v", pkg, got)
		}
	}
	for _, dep := range own(sink.Deps) {
		if _, ok := branches[dep]; !ok && !heads[dep] {
			t.Errorf("the sink links %s, which the drawing leaves out", dep)
		}
	}
}

// parseDrawing reads the drawing's branches (├─► or └─►): each package
// on one, with the packages its arrow names (nil without an arrow), and
// every package at an arrow's head.
func parseDrawing(t *testing.T, doc string) (branches map[string][]string, heads map[string]bool) {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "### Packages and what they import")
	if !ok {
		t.Fatal("docs/design.md has no section \"Packages and what they import\"")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, _ := strings.Cut(rest, "```")
	branches, heads = map[string][]string{}, map[string]bool{}
	names := func(list string) []string {
		var out []string
		for item := range strings.SplitSeq(list, ",") {
			if f := strings.Fields(item); len(f) > 0 {
				out = append(out, f[0])
			}
		}
		return out
	}
	var source string // the branch whose arrow a continuation line goes on
	leaves := false   // the continuation adds branches without an arrow
	started := false
	for line := range strings.SplitSeq(block, "\n") {
		trimmed := strings.TrimLeft(line, " │")
		switch {
		case strings.HasPrefix(trimmed, "├─►") || strings.HasPrefix(trimmed, "└─►"):
			started = true
			body := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(trimmed, "├─►"), "└─►"))
			from, to, arrow := strings.Cut(body, "►")
			if !arrow {
				for _, n := range names(body) {
					branches[n] = nil
				}
				source, leaves = "", true
				continue
			}
			source, leaves = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(from), "─")), false
			branches[source] = names(to)
			for _, n := range names(to) {
				heads[n] = true
			}
		case started && strings.TrimSpace(trimmed) != "":
			for _, n := range names(trimmed) {
				if leaves {
					branches[n] = nil
				} else if source != "" {
					branches[source] = append(branches[source], n)
					heads[n] = true
				}
			}
		}
	}
	if len(branches) < 10 {
		t.Fatalf("read %d branches from the drawing: the parser no longer reads it", len(branches))
	}
	return branches, heads
}
