package s3once

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateSurface = flag.Bool("update-surface", false, "rewrite testdata/surface/ from the code")

// TestPublicSurface renders each public package's exported surface and
// compares it with testdata/surface/<package>.txt, so that the surface
// changes only on purpose (rerun with -update-surface, and review the diff).
//
// A golden file holds what `go doc -short` prints for the package, rendered
// in process with go/parser and go/doc (so a toolchain upgrade does not change
// it), then every exported type's methods, struct fields and interface
// methods, which `go doc -short` leaves out. A public package is any
// non-main package outside internal/ with Go files; one whose surface is
// empty needs no golden file.
func TestPublicSurface(t *testing.T) {
	dirs, err := publicPackageDirs(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 5 {
		t.Fatalf("found %d public packages (%v); the walk is broken", len(dirs), dirs)
	}
	want := map[string]bool{}
	for _, dir := range dirs {
		got, err := renderSurface(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		golden := filepath.Join("testdata", "surface", surfaceName(dir))
		if got == "" {
			continue
		}
		want[golden] = true
		if *updateSurface {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%s: the package exports names but has no golden surface (%v); rerun with -update-surface", dir, err)
			continue
		}
		if string(b) != got {
			t.Errorf("%s: the public surface changed; if on purpose, rerun with -update-surface and review the diff.\n%s", dir, lineDiff(string(b), got))
		}
	}
	// A golden file of a package that is gone, or exports nothing now, is stale.
	stale, _ := filepath.Glob(filepath.Join("testdata", "surface", "*.txt"))
	for _, g := range stale {
		if !want[g] {
			if *updateSurface {
				os.Remove(g)
				continue
			}
			t.Errorf("%s describes no public package with exports; delete it", g)
		}
	}
}

// surfaceName is a package directory's golden file name: its path with
// slashes as dashes ("coder.txt", "integration-awssmoke.txt").
func surfaceName(dir string) string {
	return strings.ReplaceAll(filepath.ToSlash(dir), "/", "-") + ".txt"
}

// publicPackageDirs lists the directories under root that hold a non-main
// package outside any internal/ folder.
func publicPackageDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "internal") {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(path, 0)
		if err != nil || pkg.Name == "main" || len(pkg.GoFiles) == 0 {
			return nil
		}
		if path != root {
			dirs = append(dirs, path)
		}
		return nil
	})
	return dirs, err
}

// renderSurface renders the package in dir.
func renderSurface(dir string) (string, error) {
	bp, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return "", err
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/s3once/s3once/"+filepath.ToSlash(dir), doc.AllDecls)
	if err != nil {
		return "", err
	}
	r := &surfaceRenderer{fset: fset}
	return r.render(pkg), nil
}

type surfaceRenderer struct {
	fset *token.FileSet
	buf  bytes.Buffer
}

// render follows `go doc -short`: constants, variables and functions not
// bound to an exported type, then each exported type with its constants,
// variables and constructors indented; then the members of each type.
func (r *surfaceRenderer) render(pkg *doc.Package) string {
	bound := map[*doc.Value]bool{}
	constructor := map[*doc.Func]bool{}
	consts, vars, funcs := pkg.Consts, pkg.Vars, pkg.Funcs
	for _, typ := range pkg.Types {
		consts = append(consts, typ.Consts...)
		vars = append(vars, typ.Vars...)
		funcs = append(funcs, typ.Funcs...)
		if ast.IsExported(typ.Name) {
			for _, v := range typ.Consts {
				bound[v] = true
			}
			for _, v := range typ.Vars {
				bound[v] = true
			}
			for _, f := range typ.Funcs {
				constructor[f] = true
			}
		}
	}
	for _, values := range [][]*doc.Value{consts, vars} {
		for _, v := range values {
			if !bound[v] {
				if line := r.oneLine(v.Decl, 10); line != "" {
					fmt.Fprintf(&r.buf, "%s\n", line)
				}
			}
		}
	}
	for _, f := range funcs {
		if ast.IsExported(f.Name) && !constructor[f] {
			fmt.Fprintf(&r.buf, "%s\n", r.oneLine(f.Decl, 10))
		}
	}
	var members bytes.Buffer
	for _, typ := range pkg.Types {
		for _, spec := range typ.Decl.Specs {
			ts := spec.(*ast.TypeSpec)
			if !ast.IsExported(ts.Name.Name) {
				continue
			}
			fmt.Fprintf(&r.buf, "%s\n", r.oneLine(ts, 10))
			for _, v := range typ.Consts {
				if line := r.oneLine(v.Decl, 10); line != "" {
					fmt.Fprintf(&r.buf, "    %s\n", line)
				}
			}
			for _, v := range typ.Vars {
				if line := r.oneLine(v.Decl, 10); line != "" {
					fmt.Fprintf(&r.buf, "    %s\n", line)
				}
			}
			for _, f := range typ.Funcs {
				if ast.IsExported(f.Name) {
					fmt.Fprintf(&r.buf, "    %s\n", r.oneLine(f.Decl, 10))
				}
			}
			r.members(&members, ts, typ.Methods)
		}
	}
	if members.Len() > 0 {
		r.buf.WriteString("\n")
		r.buf.Write(members.Bytes())
	}
	return r.buf.String()
}

// members writes a type's exported fields, interface methods and methods.
func (r *surfaceRenderer) members(w *bytes.Buffer, ts *ast.TypeSpec, methods []*doc.Func) {
	var lines []string
	switch t := ts.Type.(type) {
	case *ast.StructType:
		for _, f := range t.Fields.List {
			var names []string
			for _, n := range f.Names {
				if n.IsExported() {
					names = append(names, n.Name)
				}
			}
			switch {
			case len(names) > 0:
				lines = append(lines, strings.Join(names, ", ")+" "+r.full(f.Type))
			case len(f.Names) == 0 && ast.IsExported(embeddedName(f.Type)):
				lines = append(lines, r.full(f.Type))
			}
		}
	case *ast.InterfaceType:
		for _, f := range t.Methods.List {
			switch {
			case len(f.Names) > 0 && f.Names[0].IsExported():
				lines = append(lines, f.Names[0].Name+strings.TrimPrefix(r.full(f.Type), "func"))
			case len(f.Names) == 0:
				lines = append(lines, r.full(f.Type))
			}
		}
	}
	for _, m := range methods {
		if ast.IsExported(m.Name) {
			lines = append(lines, r.oneLine(m.Decl, 10))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "type %s\n", ts.Name.Name)
	for _, l := range lines {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

func embeddedName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// full prints a type expression on one line.
func (r *surfaceRenderer) full(e ast.Expr) string {
	var b strings.Builder
	if err := format.Node(&b, r.fset, e); err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// oneLine is `go doc`'s one-line summary of a declaration.
func (r *surfaceRenderer) oneLine(node ast.Node, depth int) string {
	const dots = "..."
	if depth == 0 {
		return dots
	}
	depth--
	switch n := node.(type) {
	case nil:
		return ""
	case *ast.GenDecl:
		trailer := ""
		if len(n.Specs) > 1 {
			trailer = " " + dots
		}
		typ := ""
		for i, spec := range n.Specs {
			vs := spec.(*ast.ValueSpec)
			if vs.Type != nil {
				typ = " " + r.oneLine(vs.Type, depth)
			} else if len(vs.Values) > 0 {
				typ = ""
			}
			if !ast.IsExported(vs.Names[0].Name) {
				continue
			}
			val := ""
			if i < len(vs.Values) && vs.Values[i] != nil {
				val = " = " + r.oneLine(vs.Values[i], depth)
			}
			return fmt.Sprintf("%s %s%s%s%s", n.Tok, vs.Names[0], typ, val, trailer)
		}
		return ""
	case *ast.FuncDecl:
		recv := r.oneLine(n.Recv, depth)
		if recv != "" {
			recv = "(" + recv + ") "
		}
		return fmt.Sprintf("func %s%s%s", recv, n.Name.Name, strings.TrimPrefix(r.oneLine(n.Type, depth), "func"))
	case *ast.TypeSpec:
		sep := " "
		if n.Assign.IsValid() {
			sep = " = "
		}
		return fmt.Sprintf("type %s%s%s%s", n.Name.Name, r.typeParams(n.TypeParams, depth), sep, r.oneLine(n.Type, depth))
	case *ast.FuncType:
		var params, results []string
		if n.Params != nil {
			for _, f := range n.Params.List {
				params = append(params, r.field(f, depth))
			}
		}
		parens := false
		if n.Results != nil {
			parens = len(n.Results.List) > 1
			for _, f := range n.Results.List {
				parens = parens || len(f.Names) > 0
				results = append(results, r.field(f, depth))
			}
		}
		tp := r.typeParams(n.TypeParams, depth)
		switch {
		case len(results) == 0:
			return fmt.Sprintf("func%s(%s)", tp, joinShort(params))
		case !parens:
			return fmt.Sprintf("func%s(%s) %s", tp, joinShort(params), joinShort(results))
		}
		return fmt.Sprintf("func%s(%s) (%s)", tp, joinShort(params), joinShort(results))
	case *ast.StructType:
		if n.Fields == nil || len(n.Fields.List) == 0 {
			return "struct{}"
		}
		return "struct{ ... }"
	case *ast.InterfaceType:
		if n.Methods == nil || len(n.Methods.List) == 0 {
			return "interface{}"
		}
		return "interface{ ... }"
	case *ast.FieldList:
		if n == nil || len(n.List) == 0 {
			return ""
		}
		if len(n.List) == 1 {
			return r.field(n.List[0], depth)
		}
		return dots
	case *ast.FuncLit:
		return r.oneLine(n.Type, depth) + " { ... }"
	case *ast.CompositeLit:
		typ := r.oneLine(n.Type, depth)
		if len(n.Elts) == 0 {
			return typ + "{}"
		}
		return typ + "{ " + dots + " }"
	case *ast.ArrayType:
		return "[" + r.oneLine(n.Len, depth) + "]" + r.oneLine(n.Elt, depth)
	case *ast.MapType:
		return "map[" + r.oneLine(n.Key, depth) + "]" + r.oneLine(n.Value, depth)
	case *ast.CallExpr:
		var args []string
		for _, a := range n.Args {
			args = append(args, r.oneLine(a, depth))
		}
		return r.oneLine(n.Fun, depth) + "(" + joinShort(args) + ")"
	case *ast.UnaryExpr:
		return n.Op.String() + r.oneLine(n.X, depth)
	case *ast.Ident:
		return n.Name
	default:
		var b strings.Builder
		format.Node(&b, r.fset, node)
		if strings.Contains(b.String(), "\n") {
			return dots
		}
		return b.String()
	}
}

func (r *surfaceRenderer) typeParams(list *ast.FieldList, depth int) string {
	if list.NumFields() == 0 {
		return ""
	}
	var tps []string
	for _, f := range list.List {
		tps = append(tps, r.field(f, depth))
	}
	return "[" + joinShort(tps) + "]"
}

func (r *surfaceRenderer) field(f *ast.Field, depth int) string {
	var names []string
	for _, n := range f.Names {
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		return r.oneLine(f.Type, depth)
	}
	return joinShort(names) + " " + r.oneLine(f.Type, depth)
}

// joinShort joins with commas and cuts the list past 80 characters, as
// `go doc` does.
func joinShort(ss []string) string {
	n := 0
	for i, s := range ss {
		n += len(s) + len(", ")
		if n > 80 {
			ss = append(ss[:i:i], "...")
			break
		}
	}
	return strings.Join(ss, ", ")
}

// lineDiff lists the lines only one side has.
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
