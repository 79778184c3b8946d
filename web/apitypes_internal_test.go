package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
)

// TestNoMirrorTypes: web decodes the API's answers into the api's exported
// types, never into copies of its own that drift from them (a copy of GET
// /filters once lacked busy and waiting). A struct in web whose json tags
// name two or more fields of one api type, making up at least half of its
// own, is such a copy; two common names ("id", "error") in a struct of the
// UI's own are not.
func TestNoMirrorTypes(t *testing.T) {
	apiTypes := jsonStructs(t, "../api")
	for pos, names := range jsonStructs(t, ".") {
		for apiPos, apiNames := range apiTypes {
			var shared []string
			for _, n := range names {
				if slices.Contains(apiNames, n) {
					shared = append(shared, n)
				}
			}
			if len(shared) >= 2 && 2*len(shared) >= len(names) {
				t.Errorf("%s declares a struct with the json fields %v of the api type at %s: use the api type",
					pos, shared, apiPos)
			}
		}
	}
}

// jsonStructs maps each struct type (named or not) in the package's
// non-test, non-generated files to its json field names.
func jsonStructs(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "_templ.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			var names []string
			for _, field := range st.Fields.List {
				if field.Tag == nil {
					continue
				}
				tag, _ := strconv.Unquote(field.Tag.Value)
				name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
				if name != "" && name != "-" {
					names = append(names, name)
				}
			}
			if len(names) > 0 {
				out[fset.Position(st.Pos()).String()] = names
			}
			return true
		})
	}
	return out
}

// TestFilterViewStats: the filters page shows every counter of a filter's
// stats, busy and waiting among them.
func TestFilterViewStats(t *testing.T) {
	list := []api.FilterStatus{{Name: "sepia", State: "ready", Loaded: true, Manifest: []byte(`{"version":"1.2.0","kind":"transformation"}`),
		Stats: &api.FilterStats{Calls: 9, Errors: 1, Timeouts: 2, Rejections: 3, P50Ms: 1.5, P99Ms: 7.25, Busy: 4, Instances: 2, Waiting: 5}}}
	got := filterViews(list)
	if len(got) != 1 || got[0].Version != "1.2.0" {
		t.Fatalf("views %+v", got)
	}
	want := []kv{{"Calls", "9"}, {"Errors", "1"}, {"Timeouts", "2"}, {"Rejections", "3"}, {"p50", "1.5 ms"},
		{"p99", "7.2 ms"}, {"Busy", "4"}, {"Instances", "2"}, {"Waiting", "5"}}
	for _, w := range want {
		t.Run(w.Key, func(t *testing.T) {
			if !slices.Contains(got[0].Stats, w) {
				t.Errorf("stats %v lack %v", got[0].Stats, w)
			}
		})
	}
}
