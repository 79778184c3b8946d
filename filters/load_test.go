package filters

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRefuses checks every load-time rule of ABI.md section 3 with
// hand-assembled modules: each is refused with a reason that says why.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	good := abiModule(opReturn0)
	noMarker := good
	noMarker.funcs = good.funcs[1:]
	badMarker := good
	badMarker.funcs = []wasmFunc{{results: []byte{tI32}, body: opReturn0, export: "vitrine_abi_v1"}, good.funcs[1]}
	badExport := good
	badExport.funcs = []wasmFunc{good.funcs[0], {params: []byte{tI32}, results: []byte{tI32}, body: opReturn0, export: "vitrine_transform"}}
	noMemory := good
	noMemory.noMemExport = true
	otherMemName := good
	otherMemName.memName = "mem"
	importedMemory := abiModule(opReturn0, wasmImport{module: "env", name: "memory", memory: true})
	importedMemory.memPages = 0
	bigMemory := good
	bigMemory.memPages = 17 // > 1 MB

	cases := []struct {
		name     string
		wasm     []byte
		manifest map[string]any
		want     string
	}{
		{"garbage", []byte("\x00asm but not really"), nil, "filter.wasm"},
		{"no marker", noMarker.bytes(), nil, "not a vitrine ABI v1 module"},
		{"marker with a result", badMarker.bytes(), nil, "vitrine_abi_v1 must have type () -> ()"},
		{"export with a parameter", badExport.bytes(), nil, "vitrine_transform must have type () -> i32, has (i32) -> (i32)"},
		{"listener without vitrine_on_event", good.bytes(), map[string]any{"kind": "listener", "events": []string{"*"}}, "must export vitrine_on_event"},
		{"no memory export", noMemory.bytes(), nil, `no memory named "memory"`},
		{"memory under another name", otherMemName.bytes(), nil, `no memory named "memory"`},
		{"import from env", abiModule(opReturn0, wasmImport{module: "env", name: "abort"}).bytes(), nil, `imports from module "env"`},
		{"socket module", abiModule(opReturn0, wasmImport{module: "wasi_sockets", name: "connect", params: []byte{tI32}, results: []byte{tI32}}).bytes(), nil, `imports from module "wasi_sockets"`},
		{"unknown host function", abiModule(opReturn0, wasmImport{module: "vitrine", name: "http_get", results: []byte{tI32}}).bytes(), nil, "vitrine.http_get, which the host does not provide"},
		{"host function with the wrong type", abiModule(opReturn0, wasmImport{module: "vitrine", name: "param_get", params: []byte{tI32, tI32}, results: []byte{tI32}}).bytes(), nil, "vitrine.param_get with type (i32, i32) -> (i32); the host provides (i32, i32, i32, i32) -> (i32)"},
		{"stats_add with i32 delta", abiModule(opReturn0, wasmImport{module: "vitrine", name: "stats_add", params: []byte{tI32, tI32, tI32}, results: []byte{tI32}}).bytes(), nil, "vitrine.stats_add with type"},
		{"unknown WASI function", abiModule(opReturn0, wasmImport{module: "wasi_snapshot_preview1", name: "sock_open", results: []byte{tI32}}).bytes(), nil, "wasi_snapshot_preview1.sock_open, which the host does not provide"},
		{"imported memory", importedMemory.bytes(), nil, "imports memory env.memory"},
		{"memory over the cap", bigMemory.bytes(), map[string]any{"limits": map[string]any{"memoryMB": 1}}, "filter.wasm"},
		{"capability not allowed", good.bytes(), map[string]any{"capabilities": []string{"clock"}}, `capability "clock", which filters.allow does not grant`},
		{"native name", good.bytes(), map[string]any{"name": "resize"}, "is a native transformation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := map[string]any{"kind": "transformation"}
			for k, v := range c.manifest {
				m[k] = v
			}
			name := "f"
			if n, ok := m["name"].(string); ok {
				name = n
			}
			dir := writeFilter(t, t.TempDir(), name, c.wasm, m)
			_, err := Check(context.Background(), Config{Logger: quietLogger(), Reserved: []string{"resize"}}, dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestLoadAccepts checks that a minimal well-formed module, with an
// allowed WASI import, loads.
func TestLoadAccepts(t *testing.T) {
	t.Parallel()
	wasm := abiModule(opReturn0, wasmImport{module: "wasi_snapshot_preview1", name: "sched_yield", results: []byte{tI32}}).bytes()
	dir := writeFilter(t, t.TempDir(), "ok", wasm, map[string]any{"kind": "transformation"})
	m, err := Check(context.Background(), Config{Logger: quietLogger()}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "ok" || m.Limits.MemoryMB != DefaultMemoryMB {
		t.Fatalf("manifest = %+v", m)
	}
}

// TestHostRefusesOnlyTheBrokenFilter loads a directory with one good and
// several broken filters: the good one serves, the others are listed with
// their reasons.
func TestHostRefusesOnlyTheBrokenFilter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "good", abiModule(opReturn0).bytes(), map[string]any{"kind": "transformation"})
	writeFilter(t, dir, "nomarker", wasmModule{funcs: []wasmFunc{{results: []byte{tI32}, body: opReturn0, export: "vitrine_transform"}}, memPages: 1}.bytes(),
		map[string]any{"kind": "transformation"})
	writeFilter(t, dir, "badjson", abiModule(opReturn0).bytes(), map[string]any{"kind": "transformation", "limits": map[string]any{"memoryMb": 5}})
	writeFilter(t, dir, "Wrong", abiModule(opReturn0).bytes(), map[string]any{"kind": "transformation", "name": "other"})
	h := newHost(t, dir, nil)
	set := h.Current()
	if _, ok := set.Transformation("good"); !ok {
		t.Fatal("good is not loaded")
	}
	reasons := map[string]string{}
	for _, s := range set.Status() {
		if !s.Loaded {
			reasons[s.Name] = s.Error
		}
	}
	want := map[string]string{
		"nomarker": "not a vitrine ABI v1 module",
		"badjson":  `unknown field "limits.memoryMb"`,
		"Wrong":    `name "other" differs from the folder name "Wrong"`,
	}
	for name, sub := range want {
		if !strings.Contains(reasons[name], sub) {
			t.Errorf("%s: reason %q, want it to contain %q", name, reasons[name], sub)
		}
	}
	if len(reasons) != len(want) {
		t.Errorf("refused = %v", reasons)
	}
}

// TestHostMissingDir is a configuration error, not an empty set.
func TestHostMissingDir(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{Dir: filepath.Join(t.TempDir(), "nope"), Logger: quietLogger()})
	if err == nil {
		t.Fatal("want an error for a missing filters directory")
	}
	if _, err := New(context.Background(), Config{Allow: []string{"network"}}); err == nil {
		t.Fatal("want an error for an unknown capability in allow")
	}
	var fe *Error
	_ = errors.As(err, &fe)
}
