package sink

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const s3Package = "github.com/aws/aws-sdk-go-v2/service/s3"

// TestNoS3CallsInSink type-checks the non-test files of the sink and of
// internal/preflight and fails on any method of an S3 client used in them:
// every call, the preflight's probes included, goes through the committer
// or s3call.Probes, under a Policy and s3call's error table. A use is a method of the AWS SDK's *s3.Client, paginator or
// waiter, a method of an interface whose method set holds an S3 operation
// (committer.S3, recoverable.S3, or one declared here), or a paginator or
// waiter built from the s3 package. TestS3CallsCheckCatches shows that the
// check finds each kind.
func TestNoS3CallsInSink(t *testing.T) {
	// The preflight's probes moved to internal/preflight: the same holds
	// there.
	for _, dir := range []string{".", "../internal/preflight"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var sources []string
		for _, f := range files {
			f = filepath.Base(f)
			// The files of this build: the race and platform variants of a
			// file are checked in the builds that take them.
			if ok, err := build.Default.MatchFile(dir, f); err != nil {
				t.Fatal(err)
			} else if ok && !strings.HasSuffix(f, "_test.go") {
				sources = append(sources, f)
			}
		}
		if len(sources) == 0 {
			t.Fatalf("no Go files in %s: the check looks in the wrong place", dir)
		}
		uses, err := s3Uses(dir, sources)
		if err != nil {
			t.Fatal(err)
		}
		var bad []string
		for _, u := range uses {
			bad = append(bad, u.String())
		}
		if len(bad) > 0 {
			t.Errorf("S3 calls in %s; call the committer or s3call instead:\n%s", dir, strings.Join(bad, "\n"))
		}
	}
}

// TestS3CallsCheckCatches runs the check on a package that calls S3 in the
// ways it must catch, and in ways it must let pass.
func TestS3CallsCheckCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package probe

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
)

type heads interface {
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

type notS3 interface{ Close() error }

func a(ctx context.Context, c *s3.Client) { c.PutObject(ctx, nil) }            // WANT
func b(ctx context.Context, c committer.S3) { c.GetObject(ctx, nil) }          // WANT
func d(ctx context.Context, c heads) { _, _ = c.HeadObject(ctx, nil) }          // WANT
func e(c *s3.Client) any { return c.ListObjectsV2 }                            // WANT
func f(ctx context.Context, c *s3.Client) {
	p := s3.NewListObjectsV2Paginator(c, nil) // WANT
	_, _ = p.NextPage(ctx)                    // WANT
}
func g(x notS3) { x.Close() }
func h(c *s3.Client) s3.Options { return c.Options() }
`
	if err := os.WriteFile(filepath.Join(dir, "probe.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	uses, err := s3Uses(dir, []string{"probe.go"})
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i, line := range strings.Split(src, "\n") {
		if strings.Contains(line, "// WANT") {
			want = append(want, i+1)
		}
	}
	var got []int
	for _, u := range uses {
		got = append(got, u.line)
	}
	sort.Ints(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Errorf("S3 uses found on lines %v, want %v:\n%v", got, want, uses)
	}
}

type s3Use struct {
	file string
	line int
	what string
}

func (u s3Use) String() string { return fmt.Sprintf("%s:%d: %s", u.file, u.line, u.what) }

// s3Uses type-checks the files (of one package, in dir) against the export
// data of their imports and returns every use of an S3 client's method.
func s3Uses(dir string, files []string) ([]s3Use, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	imports := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, f)
		for _, imp := range f.Imports {
			imports[strings.Trim(imp.Path.Value, `"`)] = true
		}
	}
	exports, err := exportData(imports)
	if err != nil {
		return nil, err
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(parsed[0].Name.Name, fset, parsed, info); err != nil {
		return nil, fmt.Errorf("type-check %s: %w", dir, err)
	}
	ops := s3Operations(exports, imp)
	if len(ops) == 0 {
		return nil, fmt.Errorf("no S3 operations found on %s.Client", s3Package)
	}
	var uses []s3Use
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pos := fset.Position(sel.Pos())
			if s, ok := info.Selections[sel]; ok && (s.Kind() == types.MethodVal || s.Kind() == types.MethodExpr) {
				if what := s3Method(s.Recv(), s.Obj().Name(), ops); what != "" {
					uses = append(uses, s3Use{file: pos.Filename, line: pos.Line, what: what})
				}
				return true
			}
			// A package-level function of the s3 package that drives a
			// client: its paginators and waiters.
			if fn, ok := info.Uses[sel.Sel].(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == s3Package {
				name := fn.Name()
				if strings.HasPrefix(name, "New") && (strings.HasSuffix(name, "Paginator") || strings.HasSuffix(name, "Waiter")) {
					uses = append(uses, s3Use{file: pos.Filename, line: pos.Line, what: "s3." + name})
				}
			}
			return true
		})
	}
	return uses, nil
}

// s3Method names the S3 method m of a value of type recv, or returns "" when
// it is none.
func s3Method(recv types.Type, m string, ops map[string]bool) string {
	t := recv
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if named, ok := t.(*types.Named); ok {
		if obj := named.Obj(); obj.Pkg() != nil && obj.Pkg().Path() == s3Package {
			// The client, its paginators and waiters: any method that
			// takes a context makes a request.
			if fn := lookupMethod(recv, m); fn != nil && takesContext(fn) {
				return "(" + types.TypeString(recv, nil) + ")." + m
			}
			return ""
		}
	}
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return ""
	}
	for i := 0; i < iface.NumMethods(); i++ {
		if ops[iface.Method(i).Name()] {
			return "(" + types.TypeString(recv, nil) + ")." + m + " (an interface of S3 operations)"
		}
	}
	return ""
}

func lookupMethod(t types.Type, name string) *types.Func {
	obj, _, _ := types.LookupFieldOrMethod(t, true, nil, name)
	fn, _ := obj.(*types.Func)
	return fn
}

func takesContext(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	for i := 0; i < sig.Params().Len(); i++ {
		if types.TypeString(sig.Params().At(i).Type(), nil) == "context.Context" {
			return true
		}
	}
	return false
}

// s3Operations is the set of the S3 client's operations: the methods of
// *s3.Client that take an input of the s3 package.
func s3Operations(exports map[string]string, imp types.Importer) map[string]bool {
	if _, ok := exports[s3Package]; !ok {
		return nil
	}
	pkg, err := imp.Import(s3Package)
	if err != nil {
		return nil
	}
	client, ok := pkg.Scope().Lookup("Client").(*types.TypeName)
	if !ok {
		return nil
	}
	ops := map[string]bool{}
	ms := types.NewMethodSet(types.NewPointer(client.Type()))
	for i := 0; i < ms.Len(); i++ {
		fn := ms.At(i).Obj().(*types.Func)
		sig := fn.Type().(*types.Signature)
		if sig.Params().Len() >= 2 && strings.HasSuffix(types.TypeString(sig.Params().At(1).Type(), nil), "Input") {
			ops[fn.Name()] = true
		}
	}
	return ops
}

// exportData maps each package that the imports (and the s3 package) need
// to its compiled export data, as the go command reports it.
func exportData(imports map[string]bool) (map[string]string, error) {
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", s3Package}
	for p := range imports {
		args = append(args, p)
	}
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w: %s", err, stderr.String())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, ok := strings.Cut(sc.Text(), "=")
		if ok {
			exports[path] = file
		}
	}
	return exports, sc.Err()
}
