package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
)

// minimalTransformation is the smallest module of ABI 1 a transformation
// can be: the marker vitrine_abi_v1 () -> (), a memory, and
// vitrine_transform () -> i32 returning 0 (no output).
var minimalTransformation = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x08, 0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f, // types: () -> (), () -> i32
	0x03, 0x03, 0x02, 0x00, 0x01, // functions of types 0 and 1
	0x05, 0x03, 0x01, 0x00, 0x01, // one memory of 1 page
	0x07, 0x2f, 0x03, // exports
	0x0e, 'v', 'i', 't', 'r', 'i', 'n', 'e', '_', 'a', 'b', 'i', '_', 'v', '1', 0x00, 0x00,
	0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
	0x11, 'v', 'i', 't', 'r', 'i', 'n', 'e', '_', 't', 'r', 'a', 'n', 's', 'f', 'o', 'r', 'm', 0x00, 0x01,
	0x0a, 0x09, 0x02, 0x02, 0x00, 0x0b, 0x04, 0x00, 0x41, 0x00, 0x0b, // code: nop; i32.const 0
}

// TestGuestDescribedAsNative: a loaded filter is described with the one
// parameter schema of native transformations, so GET /transformations
// shows a guest's int default as the number 6, not the string "6".
func TestGuestDescribedAsNative(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "shade")
	manifest := `{"name":"shade","version":"1","abi":1,"kind":"transformation","params":{
		"steps":{"type":"int","min":1,"max":10,"default":6},
		"mix":{"type":"number","default":0.50},
		"tint":{"type":"color","default":"#ABC"}}}`
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"filter.json": []byte(manifest), "filter.wasm": minimalTransformation} {
		if err := os.WriteFile(filepath.Join(folder, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fh, err := filters.New(context.Background(), filters.Config{Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	reg := engine.NewRegistry()
	reg.SetGuests(guestSource{h: fh})
	var got []byte
	for _, d := range reg.Describe() {
		if d.Name == "shade" {
			got, _ = json.Marshal(d)
		}
	}
	want := `{"name":"shade","kind":"wasm","params":[` +
		`{"name":"mix","type":"number","default":0.5},` +
		`{"name":"steps","type":"int","default":6,"min":1,"max":10},` +
		`{"name":"tint","type":"color","default":"aabbccff"}]}`
	if string(got) != want {
		t.Errorf("description\n%s\nwant\n%s\n(status %+v)", got, want, fh.Current().Status())
	}
}
