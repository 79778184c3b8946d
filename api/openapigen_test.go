package api_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vitrine/vitrine/api"
)

// TestOpenAPIReadableByGenerators checks api/openapi.yaml for what made
// client generators fail on it or drop data (the generated clients and the
// lint themselves run in e2e: TestGeneratedClient, TestOpenAPITypeScript,
// TestOpenAPILint). Each check also runs on a snippet that breaks its rule,
// so it is known to fail.
func TestOpenAPIReadableByGenerators(t *testing.T) {
	doc := parseYAML(t, api.OpenAPIYAML())
	cases := []struct {
		name  string
		check func(*yaml.Node) []string
		bad   string
	}{
		{"one type name per component", sharedComponentNames,
			"components:\n  schemas: {Group: {type: object}}\n  responses: {Group: {description: x}}\n"},
		{"free-form maps name additionalProperties", mapsWithoutAdditional,
			"components:\n  schemas:\n    M: {type: object, patternProperties: {\".*\": {type: string}}}\n"},
		{"no flow-mapping key without a value", flowKeysWithoutValue,
			"x: {type: integer, description: Instances that exist now, idle or busy.}\n"},
		{"no union-typed parameter", unionParameters,
			"components:\n  parameters:\n    P: {name: p, in: query, schema: {oneOf: [{type: string}, {type: object}]}}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if problems := tc.check(doc); len(problems) > 0 {
				t.Errorf("api/openapi.yaml:\n\t%s", strings.Join(problems, "\n\t"))
			}
			if problems := tc.check(parseYAML(t, []byte(tc.bad))); len(problems) == 0 {
				t.Errorf("the check passes %q", tc.bad)
			}
		})
	}
}

func parseYAML(t *testing.T, b []byte) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

// value is the value of key in mapping n, or nil.
func value(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// walk calls f on every mapping under n, n included.
func walk(n *yaml.Node, f func(*yaml.Node)) {
	if n.Kind == yaml.MappingNode {
		f(n)
	}
	for _, c := range n.Content {
		walk(c, f)
	}
}

// sharedComponentNames: a name used in two of the sections a generator
// makes types of (oapi-codegen stops at "duplicate typename").
func sharedComponentNames(doc *yaml.Node) []string {
	sections := map[string][]string{}
	for _, sec := range []string{"schemas", "parameters", "responses", "requestBodies"} {
		m := value(value(doc, "components"), sec)
		for i := 0; m != nil && i < len(m.Content); i += 2 {
			sections[m.Content[i].Value] = append(sections[m.Content[i].Value], sec)
		}
	}
	var out []string
	for name, secs := range sections {
		if len(secs) > 1 {
			out = append(out, fmt.Sprintf("%s is a component of %s", name, strings.Join(secs, " and ")))
		}
	}
	sort.Strings(out)
	return out
}

// mapsWithoutAdditional: patternProperties alone, which generators do not
// read (a Go client drops every key, TypeScript types the map as empty).
func mapsWithoutAdditional(doc *yaml.Node) []string {
	var out []string
	walk(doc, func(m *yaml.Node) {
		if value(m, "patternProperties") != nil && value(m, "additionalProperties") == nil &&
			value(m, "type") != nil && value(m, "type").Value == "object" {
			out = append(out, fmt.Sprintf("line %d: patternProperties without additionalProperties", m.Line))
		}
	})
	return out
}

// flowKeysWithoutValue: in `{description: a, b}` the comma ends the
// description and makes "b" a key of its own.
func flowKeysWithoutValue(doc *yaml.Node) []string {
	var out []string
	walk(doc, func(m *yaml.Node) {
		if m.Style&yaml.FlowStyle == 0 {
			return
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if v := m.Content[i+1]; v.Tag == "!!null" && v.Value == "" {
				out = append(out, fmt.Sprintf("line %d: key %q has no value (quote the text before it)", v.Line, m.Content[i].Value))
			}
		}
	})
	return out
}

// unionParameters: a parameter whose schema is oneOf or anyOf, which
// oapi-codegen turns into code that does not compile.
func unionParameters(doc *yaml.Node) []string {
	var out []string
	walk(doc, func(m *yaml.Node) {
		if value(m, "in") == nil || value(m, "name") == nil {
			return
		}
		if s := value(m, "schema"); value(s, "oneOf") != nil || value(s, "anyOf") != nil {
			out = append(out, fmt.Sprintf("line %d: parameter %s is a union", m.Line, value(m, "name").Value))
		}
	})
	return out
}
