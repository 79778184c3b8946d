package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFilterStartup starts the server with a filter whose module takes
// seconds to compile (deeply nested blocks, as a hostile author would
// write), a fatal listener whose start never returns, and a module over
// filters.maxModuleBytes: the server answers at once; the slow filters are
// "loading", meanwhile a step of the transformation and the listener's
// events answer 503, until the compile timeout marks each failed (one
// compilation at a time: the transformation's deadline runs once the
// listener's has passed); the large one is refused naming the limit.
func TestFilterStartup(t *testing.T) {
	dir := t.TempDir()
	hostile := nestedBlocksModule(60000)
	writeFilterFolder(t, dir, "gate", `"kind": "listener", "events": ["metadata.get"]`, stuckListenerModule())
	writeFilterFolder(t, dir, "hostile", `"kind": "transformation"`, hostile)
	writeFilterFolder(t, dir, "huge", `"kind": "transformation"`, make([]byte, 300_000))
	admin := key{Public: "admin", Private: "admin-secret"}
	const limit = 262144
	if len(hostile) >= limit {
		t.Fatalf("the hostile module (%d bytes) must fit under the limit", len(hostile))
	}
	began := time.Now()
	s := startServer(t, fmt.Sprintf(`filters:
  dir: %s
  compileTimeout: 3s
  maxModuleBytes: %d
accessControl:
  keys:
    - publicKey: admin
      privateKey: admin-secret
      rules:
        - users: "*"
          group: all
`, dir, limit))
	// Before filters loaded in the background, the server listened only
	// once this module had compiled: 16-22 s here.
	if d := time.Since(began); d > time.Second {
		t.Errorf("GET /status answered %s after the server started, want within a second", d)
	} else {
		t.Logf("GET /status answered %s after the server started, %d-byte module compiling", d.Round(time.Millisecond), len(hostile))
	}

	var id string
	t.Run("listening while compiling", func(t *testing.T) {
		list := listFilters(t, s, admin)
		for _, name := range []string{"gate", "hostile"} {
			if f := list[name]; f.State != "loading" || f.Loaded {
				t.Fatalf("%s: %+v", name, f)
			}
		}
		r := s.write(t, http.MethodPost, "/users/admin/images", testPNG(t, 64, 48, 7), admin)
		wantStatus(t, "upload", r, http.StatusCreated)
		var up struct{ ImageIdentifier string }
		r.JSON(t, &up)
		id = up.ImageIdentifier
		wantStatus(t, "a native chain", s.get(t, "/users/admin/images/"+id+".png?t[]=thumbnail:width=10,height=10", admin), http.StatusOK)
	})

	t.Run("a loading filter answers 503", func(t *testing.T) {
		r := s.get(t, "/users/admin/images/"+id+".png?t[]=hostile", admin)
		s.checkError(t, "t[]=hostile", r, http.StatusServiceUnavailable, "filter hostile is still loading")
		if ra := r.Header.Get("Retry-After"); ra != "1" {
			t.Errorf("Retry-After = %q", ra)
		}
		r = s.get(t, "/users/admin/images/"+id+"/metadata", admin)
		s.checkError(t, "an event of the fatal listener", r, http.StatusServiceUnavailable, "filter gate is still loading")
		if f := listFilters(t, s, admin)["gate"]; f.State != "loading" {
			t.Fatalf("the requests were not answered while gate was loading: %+v", f)
		}
	})

	t.Run("a module over the limit is refused naming it", func(t *testing.T) {
		f := listFilters(t, s, admin)["huge"]
		if f.State != "failed" || f.Loaded || !strings.Contains(f.Error, "filter.wasm is 300000 bytes, over the limit of 262144 bytes (filters.maxModuleBytes)") {
			t.Fatalf("huge: %+v", f)
		}
		r := s.get(t, "/users/admin/images/"+id+".png?t[]=huge", admin)
		s.checkError(t, "t[]=huge", r, http.StatusBadRequest, `Transformation "huge" not registered`)
	})

	t.Run("the compile timeout marks them failed", func(t *testing.T) {
		f := waitLoaded(t, s, admin, "gate")
		if f.State != "failed" || f.Loaded || !strings.Contains(f.Error, "within 3s (filters.compileTimeout)") {
			t.Fatalf("gate: %+v", f)
		}
		wantStatus(t, "metadata once gate failed", s.get(t, "/users/admin/images/"+id+"/metadata", admin), http.StatusOK)
		f = waitLoaded(t, s, admin, "hostile")
		if f.State != "failed" || f.Loaded || !strings.Contains(f.Error, "did not compile and start within 3s (filters.compileTimeout)") {
			t.Fatalf("hostile: %+v", f)
		}
		t.Logf("hostile failed %s after start", time.Since(began).Round(time.Millisecond))
		r := s.get(t, "/users/admin/images/"+id+".png?t[]=hostile", admin)
		s.checkError(t, "t[]=hostile once failed", r, http.StatusBadRequest, `Transformation "hostile" not registered`)
	})

	t.Run("a reload tries a timeout again and waits at most the compile timeout", func(t *testing.T) {
		// hostile's abandoned compilation still runs: the new attempts wait
		// for it, and the POST answers once the compile timeout has passed.
		start := time.Now()
		r := s.write(t, http.MethodPost, "/filters/reload", nil, admin)
		wantStatus(t, "POST /filters/reload", r, http.StatusOK)
		var body struct{ Filters []filterStatus }
		r.JSON(t, &body)
		for _, f := range body.Filters {
			if f.Name != "huge" && f.State != "loading" {
				t.Errorf("%s after the reload: %+v", f.Name, f)
			}
		}
		t.Logf("POST /filters/reload answered after %s", time.Since(start).Round(time.Millisecond))
	})
}

// waitLoaded waits until the filter name is no longer loading and returns
// its status then.
func waitLoaded(t *testing.T, s *server, k key, name string) filterStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		f := listFilters(t, s, k)[name]
		if f.State != "loading" {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still loading after a minute", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeFilterFolder writes <dir>/<name> with a manifest of the given kind
// fields and the module wasm.
func writeFilterFolder(t *testing.T, dir, name, kind string, wasm []byte) {
	t.Helper()
	fdir := filepath.Join(dir, name)
	if err := os.MkdirAll(fdir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`{"name": %q, "version": "1.0.0", "abi": 1, %s}`, name, kind)
	if err := os.WriteFile(filepath.Join(fdir, "filter.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fdir, "filter.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
}

// nestedBlocksModule is a valid transformation module whose
// vitrine_transform is n nested empty blocks: harmless to run, and
// compiling it takes time that grows much faster than n (40,000 blocks took
// 6.5 s here, 60,000 16 s).
func nestedBlocksModule(n int) []byte {
	body := make([]byte, 0, 3*n+2)
	for range n {
		body = append(body, 0x02, 0x40) // block
	}
	for range n {
		body = append(body, 0x0b) // end
	}
	return wasmModule(wasmFunc{"vitrine_transform", true, append(body, 0x41, 0x00)}) // i32.const 0
}

// stuckListenerModule is a valid listener module whose _initialize never
// returns: it compiles at once and never starts.
func stuckListenerModule() []byte {
	return wasmModule(wasmFunc{"vitrine_on_event", true, []byte{0x41, 0x00}},
		wasmFunc{"_initialize", false, []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}}) // loop br 0 end
}

// wasmFunc is one exported function of wasmModule: () -> i32 when result,
// else () -> (), with body (without locals and the final end).
type wasmFunc struct {
	export string
	result bool
	body   []byte
}

// wasmModule assembles a module with one page of memory exported as
// "memory", the ABI marker vitrine_abi_v1 and fns.
func wasmModule(fns ...wasmFunc) []byte {
	leb := func(v uint32) []byte {
		var out []byte
		for {
			b := byte(v & 0x7f)
			if v >>= 7; v == 0 {
				return append(out, b)
			}
			out = append(out, b|0x80)
		}
	}
	section := func(id byte, content []byte) []byte {
		return append(append([]byte{id}, leb(uint32(len(content)))...), content...)
	}
	name := func(s string) []byte { return append(leb(uint32(len(s))), s...) }
	fns = append([]wasmFunc{{export: "vitrine_abi_v1"}}, fns...)
	types := []byte{0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f} // 0: () -> (), 1: () -> i32
	funcs := leb(uint32(len(fns)))
	exports := leb(uint32(len(fns) + 1))
	code := leb(uint32(len(fns)))
	for i, f := range fns {
		typ := byte(0)
		if f.result {
			typ = 1
		}
		funcs = append(funcs, typ)
		exports = append(append(exports, name(f.export)...), 0x00, byte(i))
		body := append(append([]byte{0x00}, f.body...), 0x0b) // no locals ... end
		code = append(append(code, leb(uint32(len(body)))...), body...)
	}
	exports = append(append(exports, name("memory")...), 0x02, 0x00)
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, types)...)
	out = append(out, section(3, funcs)...)
	out = append(out, section(5, []byte{0x01, 0x00, 0x01})...) // one page
	out = append(out, section(7, exports)...)
	out = append(out, section(10, code)...)
	return out
}
