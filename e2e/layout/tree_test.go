package layout

import (
	"bufio"
	"go/ast"
	"go/build/constraint"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// goFile is one Go source file of the repository.
type goFile struct {
	path string // slash-separated, from the repository root
	dir  string // its folder from the root: "." for package main
	test bool   // a _test.go file
}

// repo finds the repository root (the first folder upwards holding a
// go.mod, as the go command does) and returns it with the module path its
// go.mod declares.
func repo(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			s := bufio.NewScanner(f)
			for s.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s: no module line", f.Name())
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// goFiles lists the repository's Go files the way the go command sees
// packages: folders named testdata or starting with . or _ hold none, nor do
// files starting with . or _. Nested modules (wasm-sdk, e2e/load/hostile)
// are walked too; their folders are named from the repository root.
func goFiles(t *testing.T, root string) []goFile {
	t.Helper()
	var files []goFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p == filepath.Join(root, "data") {
				return filepath.SkipDir // make run's images and database, in .gitignore
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		files = append(files, goFile{path: rel, dir: path.Dir(rel), test: strings.HasSuffix(name, "_test.go")})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// buildable reports whether some build (any GOOS, GOARCH and tags, but
// never the "ignore" tag) compiles f: the rules hold for every platform's
// files at once, and only `//go:build ignore` programs are left out. The
// file must have been parsed with its comments.
func buildable(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return true // the compiler reports it; the rules still read the file
			}
			return satisfiable(expr)
		}
	}
	return true
}

// satisfiable tries every assignment of expr's tags, "ignore" always
// false.
func satisfiable(expr constraint.Expr) bool {
	on := map[string]bool{}
	collect(expr, on)
	delete(on, "ignore")
	var tags []string
	for tag := range on {
		tags = append(tags, tag)
	}
	if len(tags) > 16 {
		return true
	}
	for set := 0; set < 1<<len(tags); set++ {
		for i, tag := range tags {
			on[tag] = set&(1<<i) != 0
		}
		if expr.Eval(func(tag string) bool { return on[tag] }) {
			return true
		}
	}
	return false
}

// collect adds expr's tags to tags (Eval cannot list them: it stops early
// on && and ||).
func collect(expr constraint.Expr, tags map[string]bool) {
	switch e := expr.(type) {
	case *constraint.TagExpr:
		tags[e.Tag] = false
	case *constraint.NotExpr:
		collect(e.X, tags)
	case *constraint.AndExpr:
		collect(e.X, tags)
		collect(e.Y, tags)
	case *constraint.OrExpr:
		collect(e.X, tags)
		collect(e.Y, tags)
	}
}
