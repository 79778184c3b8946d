package storagetest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vitrine/vitrine/storage"
)

// testListMetadataFilter checks Query.Metadata: scalar matching by text,
// AND across pairs, hits that follow the filter, and keys that would break
// out of a JSON path or an SQL string if they were not bound.
func testListMetadataFilter(t *testing.T, db *storage.DB) {
	listFixture(t, db)
	docs := map[string]map[string]any{
		"a1": {"color": "red", "n": 3, "ok": true, "nested": map[string]any{"color": "red"}},
		"a2": {"color": "red", "n": 1.5, "ok": false, "none": nil},
		"b1": {"color": "blue", "n": "3", "list": []any{"red"}},
		"c1": {`a"b`: "q", `n"q`: json.Number("1.50"), "e": json.Number("1e3"), "x.y": "dot", "$": "dollar", `it's`: "quote", `back\slash`: "bs"},
	}
	for id, md := range docs {
		user := map[byte]string{'a': "alice", 'b': "bob", 'c': "carol"}[id[0]]
		if err := db.SetMetadata(ctx(t), user, id, md); err != nil {
			t.Fatal(err)
		}
	}
	m := func(kv ...string) []storage.MetadataMatch {
		var out []storage.MetadataMatch
		for i := 0; i < len(kv); i += 2 {
			out = append(out, storage.MetadataMatch{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	cases := []listCase{
		{"string", storage.Query{Metadata: m("color", "red")}, []string{"a2", "a1"}},
		{"string is case sensitive", storage.Query{Metadata: m("color", "Red")}, []string{}},
		{"integer and string of digits", storage.Query{Metadata: m("n", "3")}, []string{"b1", "a1"}},
		{"decimal", storage.Query{Metadata: m("n", "1.5")}, []string{"a2"}},
		{"true", storage.Query{Metadata: m("ok", "true")}, []string{"a1"}},
		{"false", storage.Query{Metadata: m("ok", "false")}, []string{"a2"}},
		{"boolean is not a number", storage.Query{Metadata: m("ok", "1")}, []string{}},
		{"missing key", storage.Query{Metadata: m("size", "red")}, []string{}},
		{"null never matches", storage.Query{Metadata: m("none", "null")}, []string{}},
		{"object never matches", storage.Query{Metadata: m("nested", `{"color":"red"}`)}, []string{}},
		{"array never matches", storage.Query{Metadata: m("list", `["red"]`)}, []string{}},
		{"top level only", storage.Query{Metadata: m("nested.color", "red")}, []string{}},
		{"two pairs ANDed", storage.Query{Metadata: m("color", "red", "ok", "true")}, []string{"a1"}},
		{"two pairs, none", storage.Query{Metadata: m("color", "blue", "ok", "true")}, []string{}},
		{"with users", storage.Query{Users: []string{"bob"}, Metadata: m("n", "3")}, []string{"b1"}},
		{"with ids", storage.Query{IDs: []string{"a2", "b1"}, Metadata: m("color", "red")}, []string{"a2"}},
		{"key with a quote", storage.Query{Metadata: m(`a"b`, "q")}, []string{"c1"}},
		{"number as written", storage.Query{Metadata: m("e", "1e3")}, []string{"c1"}},
		{"number as written, not normalised", storage.Query{Metadata: m("e", "1000")}, []string{}},
		{"number under a key with a quote", storage.Query{Metadata: m(`n"q`, "1.50")}, []string{"c1"}},
		{"key with a dot", storage.Query{Metadata: m("x.y", "dot")}, []string{"c1"}},
		{"key $", storage.Query{Metadata: m("$", "dollar")}, []string{"c1"}},
		{"key with an apostrophe", storage.Query{Metadata: m("it's", "quote")}, []string{"c1"}},
		{"key with a backslash", storage.Query{Metadata: m(`back\slash`, "bs")}, []string{"c1"}},
		{"injection attempt", storage.Query{Metadata: m(`color') OR 1=1 --`, "red")}, []string{}},
		{"path attempt", storage.Query{Metadata: m(`$.color`, "red")}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkList(t, db, c) })
	}
	t.Run("hits count beyond the page", func(t *testing.T) {
		page, err := db.Images(ctx(t), storage.Query{Limit: 1, Metadata: m("color", "red")})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(page); !reflect.DeepEqual(got, []string{"a2"}) || page.Hits != 2 {
			t.Fatalf("page = %q, %d hits; want [a2], 2 hits", got, page.Hits)
		}
	})
}

// listCase is a listing query and the identifiers it must return, in order.
type listCase struct {
	name string
	q    storage.Query
	want []string
}

// checkList runs c's query and checks its identifiers and its hits.
func checkList(t *testing.T, db *storage.DB, c listCase) storage.Page {
	t.Helper()
	page, err := db.Images(ctx(t), c.q)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page); !reflect.DeepEqual(got, c.want) {
		t.Fatalf("ids = %q, want %q", got, c.want)
	}
	if page.Hits != len(c.want) {
		t.Fatalf("Hits = %d, want %d", page.Hits, len(c.want))
	}
	return page
}
