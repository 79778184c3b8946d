package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A layer is one row of the import rules, in the spirit of Go's own
// go/build/deps_test.go. Packages are named by their folder from the
// repository root; "x/..." is x and every package under it, and "*" in may
// is any package of this repository.
//
// The rules hold what a package's non-test files import of this
// repository strictly. Its _test.go files may import the same, the package
// itself, any test-support package (support below) and what its tests
// list. Imports from outside the repository are free, except where std or
// deny says otherwise (for non-test files).
type layer struct {
	pkg     string
	may     []string // this repository's packages its non-test files may import
	tests   []string // what its _test.go files may import beyond that
	std     bool     // its non-test files import the standard library only
	deny    []string // import paths (or "path/..." trees) its non-test files never import
	support bool     // a test-support package: any package's tests may import it
	why     string
}

// anything is package main's and e2e's rule.
var anything = []string{"*"}

// apiParts are api's own subpackages, its test support aside.
var apiParts = []string{"api/outbound", "api/outbox", "api/webhook", "api/cdn", "api/ratelimit"}

// layers is the layout e2e/README.md's Layout section describes, as data. A
// package no row covers fails the test, so a new package is added here with
// what it may import.
var layers = []layer{
	{pkg: ".", may: anything,
		why: "package main is the wiring: it composes every package's Config and hands filters to engine and api"},

	{pkg: "api", may: append([]string{"engine", "engine/schema", "storage"}, apiParts...), tests: []string{"filters"},
		why: "the service renders through engine and keeps state in storage; filters reach it only through main; its tests check that filters' errors and events fit api's"},
	{pkg: "api/outbound", std: true,
		why: "the guard every connection to a user-supplied address goes through stays small enough to audit (api/outbound/README.md)"},
	{pkg: "api/outbox", may: []string{"storage", "api/webhook", "api/cdn", "engine/schema"},
		why: "delivers the event rows storage keeps to their sinks (webhooks, purgers, buses); it knows nothing of the service that wrote them"},
	{pkg: "api/webhook",
		why: "signs and sends one delivery; a leaf of api"},
	{pkg: "api/cdn", may: []string{"storage"},
		why: "cache tags and purgers; it purges by storage's event catalogue and subject grammar"},
	{pkg: "api/ratelimit",
		why: "the rate limiter, in process or on Redis; a leaf of api"},
	{pkg: "api/openapitest", may: []string{"api"}, support: true,
		why: "test support: checks requests and answers against api/openapi.yaml, which api embeds"},
	{pkg: "api/cdn/cdntest", may: []string{"api/cdn"}, support: true,
		why: "test support: runs the caches api/cdn purges"},

	{pkg: "engine", may: []string{"engine/schema"},
		why: "native image work; it reads stored answers through an interface it defines instead of importing storage"},
	{pkg: "engine/schema", std: true,
		why: "the leaf engine, filters and api share: no package of ours and nothing outside the standard library"},
	{pkg: "engine/schema/schematest", may: []string{"engine/schema"}, support: true,
		why: "test support: the colour syntax's table that engine, filters and web each run"},
	{pkg: "engine/videotest", std: true, support: true,
		why: "test support: makes short real videos with Debian's ffmpeg for engine's and api's video tests"},

	{pkg: "filters", may: []string{"engine/schema"}, deny: []string{"github.com/davidbyttow/govips/..."},
		why: "a filter works on plain pixels or an event's data: never govips, engine proper or api; main hands filters to them"},

	{pkg: "storage",
		why: "persistence is the bottom layer: nothing of ours"},
	{pkg: "storage/storagetest", may: []string{"storage"}, support: true,
		why: "test support: the conformance suites every storage backend passes"},

	{pkg: "web", may: []string{"api"}, tests: append([]string{"engine", "storage"}, apiParts...),
		why: "the admin UI is a client of the REST API through api's http.Handler; its tests build that handler from its parts, as main does"},

	{pkg: "e2e/faultproxy", std: true, support: true,
		why: "test support: the TCP proxy that stalls, cuts or refuses a dependency, for any package's fault tests"},
	{pkg: "e2e/...", may: anything,
		why: "black-box tests of the binary and the load tools drive the whole"},

	{pkg: "wasm-sdk/...", may: []string{"wasm-sdk/..."},
		why: "its own module for filter authors (GOOS=wasip1, no cgo): nothing of the server"},
}

// topLevel is every folder the repository root may hold besides
// dot-folders (.git, .ci, an editor's), which the go command skips too.
var topLevel = []string{
	"api", "engine", "filters", "storage", "web", "wasm-sdk", "e2e",
	"data", // where `make run` keeps the embedded default's database and files (in .gitignore)
}

// TestLayering fails on any import of this repository's packages outside
// layers, on a package no row covers, on a row that covers no package and on
// a top-level folder outside topLevel.
func TestLayering(t *testing.T) {
	root, module := repo(t)
	checkTopLevel(t, root)

	fset := token.NewFileSet()
	covered := map[string]bool{}   // rows that cover a package
	uncovered := map[string]bool{} // packages reported as in no row
	for _, f := range goFiles(t, root) {
		af, err := parser.ParseFile(fset, filepath.Join(root, f.path), nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Error(err)
			continue
		}
		if !buildable(af) {
			continue
		}
		l := layerOf(f.dir)
		if l == nil {
			if !uncovered[f.dir] {
				uncovered[f.dir] = true
				t.Errorf("package %s: no row of layers covers it; add one with what it may import", f.dir)
			}
			continue
		}
		covered[l.pkg] = true
		for _, spec := range af.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Error(err)
				continue
			}
			if rule := l.refuse(f, imp, module); rule != "" {
				t.Errorf("package %s (%s) imports %s, but %s; why: %s", f.dir, f.path, imp, rule, l.why)
			}
		}
	}
	for _, l := range layers {
		if !covered[l.pkg] {
			t.Errorf("layers: row %s covers no package; remove it or name the package's folder", l.pkg)
		}
	}
}

// refuse names the rule that keeps f, a file of l's package, from
// importing imp, or returns "" when it may.
func (l *layer) refuse(f goFile, imp, module string) string {
	rel, ours := strings.CutPrefix(imp, module+"/")
	if imp == module {
		rel, ours = ".", true
	}
	if !ours {
		switch {
		case f.test:
			return ""
		case l.std && !standard(imp):
			return f.dir + " imports the standard library only"
		case matchAny(l.deny, imp):
			return f.dir + " never imports " + strings.Join(l.deny, " or ")
		}
		return ""
	}
	if matchAny(l.may, rel) {
		return ""
	}
	if !f.test {
		if len(l.may) == 0 {
			return f.dir + " imports no package of ours"
		}
		return f.dir + " imports only " + strings.Join(l.may, ", ")
	}
	if rel == f.dir || matchAny(l.tests, rel) || supports(rel) {
		return ""
	}
	may := append(slices.Concat(l.may, l.tests), "itself", "the test-support packages")
	return f.dir + "'s tests import only " + strings.Join(may[:len(may)-1], ", ") + " and " + may[len(may)-1]
}

// layerOf returns the row covering the package in dir: the row naming it,
// else the longest "x/..." row holding it.
func layerOf(dir string) *layer {
	var best *layer
	for i := range layers {
		l := &layers[i]
		if l.pkg == dir {
			return l
		}
		if match(l.pkg, dir) && (best == nil || len(l.pkg) > len(best.pkg)) {
			best = l
		}
	}
	return best
}

// match reports whether pattern ("*", "x/..." or a package) holds pkg.
func match(pattern, pkg string) bool {
	if pattern == "*" || pattern == pkg {
		return true
	}
	tree, ok := strings.CutSuffix(pattern, "/...")
	return ok && (pkg == tree || strings.HasPrefix(pkg, tree+"/"))
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, pkg) })
}

// supports reports whether pkg is a test-support package.
func supports(pkg string) bool {
	return slices.ContainsFunc(layers, func(l layer) bool { return l.support && l.pkg == pkg })
}

// standard reports whether imp is in the standard library: its first
// element has no dot, as go/build/deps_test.go reads it. cgo's "C" is not.
func standard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return imp != "C" && !strings.Contains(first, ".")
}

// checkTopLevel fails on a folder at the root outside topLevel.
func checkTopLevel(t *testing.T, root string) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains(topLevel, e.Name()) {
			t.Errorf("top-level folder %s/: the root holds only %s (and dot-folders); a new package goes into one of them",
				e.Name(), strings.Join(topLevel, ", "))
		}
	}
}
