package filters

import (
	"encoding/json"
	"testing"

	"github.com/vitrine/vitrine/engine/schema/schematest"
)

// TestColorSyntax: a guest's colour parameter takes the one colour syntax
// (without none), as the engine and the admin UI do, and the guest reads
// it as rrggbbaa.
func TestColorSyntax(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte(`{"name":"c","version":"1","abi":1,"kind":"transformation",
		"params":{"c":{"type":"color"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	schematest.TestColors(t, false, func(s string, _ bool) (string, bool) {
		out, err := m.Normalise(map[string]string{"c": s})
		return out["c"], err == nil
	})
}

// TestSchemaDefaults: once validated, a parameter is the one schema of
// every transformation, named after its key, with a default of its JSON
// type (an int's a number, as a native one's), normalised.
func TestSchemaDefaults(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte(`{"name":"d","version":"1","abi":1,"kind":"transformation","params":{
		"i":{"type":"int","default":6},"n":{"type":"number","default":0.50},"b":{"type":"bool","default":true},
		"c":{"type":"color","default":"#ABC"},"s":{"type":"string","default":"x"},"e":{"type":"enum","values":["a"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, json string }{
		{"i", `{"name":"i","type":"int","default":6}`},
		{"n", `{"name":"n","type":"number","default":0.5}`},
		{"b", `{"name":"b","type":"bool","default":true}`},
		{"c", `{"name":"c","type":"color","default":"aabbccff"}`},
		{"s", `{"name":"s","type":"string","default":"x"}`},
		{"e", `{"name":"e","type":"enum","values":["a"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(m.Params[tc.name].Param)
			if err != nil || string(b) != tc.json {
				t.Errorf("schema %s (%v), want %s", b, err, tc.json)
			}
		})
	}
	if v, ok := m.Params["i"].DefaultValue(); !ok || v != "6" {
		t.Errorf("the guest reads the int default as %q, %v; want \"6\"", v, ok)
	}
}
