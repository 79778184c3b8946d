package filters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Names the ABI gives to exports (ABI.md section 3).
const (
	exportMarker    = "vitrine_abi_v1"
	exportTransform = "vitrine_transform"
	exportOnEvent   = "vitrine_on_event"
	exportMemory    = "memory"
	wasiModule      = wasi_snapshot_preview1.ModuleName
)

// source is a filter folder as read from disk, or a bundle pushed
// through the API.
type source struct {
	dir string
	// name is the filter's name: its folder's, or the bundle's.
	name     string
	manifest []byte
	wasm     []byte
	hash     string
	// origin is SourceDir or SourceAPI; version the bundle's version
	// (BundleVersion) for SourceAPI.
	origin, version string
}

// BundleVersion is the version of a filter bundle: the SHA-256 over the
// manifest's length, the manifest and the module, hex. Its first 32
// digits are the filter's ContentHash, whichever way it was deployed.
func BundleVersion(manifest, wasm []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", len(manifest))
	h.Write(manifest)
	h.Write(wasm)
	return hex.EncodeToString(h.Sum(nil))
}

// readSource reads a filter folder and computes its content hash: the first
// 16 bytes of SHA-256 over the manifest and the module, hex. A module over
// maxModule bytes is refused without being read whole.
func readSource(dir string, maxModule int64) (*source, error) {
	m, err := os.ReadFile(filepath.Join(dir, "filter.json"))
	if err != nil {
		return nil, err
	}
	w, err := readModule(filepath.Join(dir, "filter.wasm"), maxModule)
	if err != nil {
		return nil, err
	}
	return &source{dir: dir, name: filepath.Base(dir), manifest: m, wasm: w, hash: BundleVersion(m, w)[:32],
		origin: SourceDir}, nil
}

// readModule reads the module at path, refusing one over limit bytes
// before reading it; the read itself stops past the limit, in case the
// file grows meanwhile.
func readModule(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return fmt.Errorf("filter.wasm is %d bytes, over the limit of %d bytes (filters.maxModuleBytes)", size, limit)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		return nil, tooLarge(fi.Size())
	}
	w, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(w)) > limit {
		return nil, tooLarge(int64(len(w)))
	}
	return w, nil
}

// requiredExport returns the export a filter of kind must have.
func requiredExport(kind string) string {
	if kind == KindListener {
		return exportOnEvent
	}
	return exportTransform
}

// checkExports applies the module requirements of ABI.md section 3 to the
// exports: the marker first, then memory and the kind's entry point.
func checkExports(c wazero.CompiledModule, kind string) error {
	fns := c.ExportedFunctions()
	marker, ok := fns[exportMarker]
	if !ok {
		return errors.New("not a vitrine ABI v1 module (no export " + exportMarker + ")")
	}
	if len(marker.ParamTypes()) != 0 || len(marker.ResultTypes()) != 0 {
		return fmt.Errorf("export %s must have type () -> (), has %s", exportMarker, signature(marker))
	}
	if _, ok := c.ExportedMemories()[exportMemory]; !ok {
		return errors.New("the module exports no memory named \"memory\"")
	}
	name := requiredExport(kind)
	fn, ok := fns[name]
	if !ok {
		return fmt.Errorf("a %s must export %s", kind, name)
	}
	if len(fn.ParamTypes()) != 0 || !slices.Equal(fn.ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
		return fmt.Errorf("export %s must have type () -> i32, has %s", name, signature(fn))
	}
	return nil
}

// checkImports refuses any import but the host functions and WASI, each
// with the signature the host provides.
func checkImports(c wazero.CompiledModule, provided map[string]map[string]api.FunctionDefinition) error {
	if mems := c.ImportedMemories(); len(mems) > 0 {
		mod, name, _ := mems[0].Import()
		return fmt.Errorf("imports memory %s.%s; a filter must define its own memory", mod, name)
	}
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		defs, ok := provided[mod]
		if !ok {
			return fmt.Errorf("imports from module %q (%s); only %q and %q are allowed", mod, name, hostModule, wasiModule)
		}
		want, ok := defs[name]
		if !ok {
			return fmt.Errorf("imports %s.%s, which the host does not provide", mod, name)
		}
		if !slices.Equal(f.ParamTypes(), want.ParamTypes()) || !slices.Equal(f.ResultTypes(), want.ResultTypes()) {
			return fmt.Errorf("imports %s.%s with type %s; the host provides %s", mod, name, signature(f), signature(want))
		}
	}
	return nil
}

// signature renders a function type as `(i32, i32) -> i32`.
func signature(f api.FunctionDefinition) string {
	types := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return types(f.ParamTypes()) + " -> " + types(f.ResultTypes())
}

// startFunction is the function the host runs once per instance: the WASI
// reactor's _initialize, or a command's _start.
func startFunction(c wazero.CompiledModule) []string {
	fns := c.ExportedFunctions()
	if _, ok := fns["_initialize"]; ok {
		return []string{"_initialize"}
	}
	if _, ok := fns["_start"]; ok {
		return []string{"_start"}
	}
	return nil
}

// newRuntime creates the runtime of one filter: the compiler (where the
// platform has one), the shared compilation cache, termination when a
// call's context ends, and the filter's memory cap. Why one runtime per
// filter: the memory cap is a runtime setting.
func newRuntime(ctx context.Context, cache wazero.CompilationCache, memoryMB int) wazero.Runtime {
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(memoryMB) * 16) // 64 KiB pages
	if cache != nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	return wazero.NewRuntimeWithConfig(ctx, cfg)
}
