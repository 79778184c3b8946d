package layout

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"testing"
)

// The size limits of the code a person reads to change the server: past
// them a file holds more than one concept and a function more than one
// step.
const (
	maxFileLines = 500
	maxFuncLines = 80
	// maxRootFiles bounds package main's non-test files: the commands and
	// the App that starts the server (README.md, Where things live); what
	// the server does lives in the packages they wire.
	maxRootFiles = 15
)

// sized reports whether the limits hold for f. Tests, test-support
// packages, testdata (which goFiles skips) and all of e2e (black-box tests,
// load tools, the generated client) are test code; the migrations
// (storage/step*.go) are a schema history, written once. Generated files
// are left out after parsing.
func sized(f goFile) bool {
	if f.test || match("e2e/...", f.dir) || supports(f.dir) {
		return false
	}
	migration, _ := path.Match("storage/step*.go", f.path)
	return !migration
}

// TestSizeLimits fails on a file over maxFileLines lines and a function or
// method over maxFuncLines lines, from its func keyword to its closing
// brace, outside what sized leaves out.
func TestSizeLimits(t *testing.T) {
	root, _ := repo(t)
	fset := token.NewFileSet()
	for _, f := range goFiles(t, root) {
		if !sized(f) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Error(err)
			continue
		}
		af, err := parser.ParseFile(fset, f.path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Error(err)
			continue
		}
		if ast.IsGenerated(af) {
			continue
		}
		if n := lineCount(src); n > maxFileLines {
			t.Errorf("%s: file is %d lines, over the limit of %d", f.path, n, maxFileLines)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: func %s is %d lines, over the limit of %d", f.path, start.Line, funcName(fd), n, maxFuncLines)
			}
		}
	}
}

// lineCount counts lines as wc -l does, plus a last line with no newline.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// funcName names fd as the failures do: F, or T.M for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch e := typ.(type) {
		case *ast.StarExpr:
			typ = e.X
			continue
		case *ast.IndexExpr:
			typ = e.X
			continue
		case *ast.IndexListExpr:
			typ = e.X
			continue
		case *ast.Ident:
			return e.Name + "." + fd.Name.Name
		}
		return fmt.Sprintf("%T.%s", typ, fd.Name.Name)
	}
}

// TestRootFiles fails when package main, at the repository root, holds
// more than maxRootFiles non-test Go files, naming them.
func TestRootFiles(t *testing.T) {
	root, _ := repo(t)
	var names []string
	for _, f := range goFiles(t, root) {
		if f.dir == "." && !f.test {
			names = append(names, f.path)
		}
	}
	if len(names) > maxRootFiles {
		t.Errorf("the root holds %d non-test Go files, over the limit of %d: %v; "+
			"move behaviour into the package it belongs to", len(names), maxRootFiles, names)
	}
}
