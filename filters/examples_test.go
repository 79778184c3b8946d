package filters

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The examples of wasm-sdk, built from their source by the standard
// toolchain, as their README says, and run by this host with their own
// manifests.

// examples holds each built example: a filters folder of its own whose one
// filter is the example. root holds them all and is removed by TestMain.
var examples struct {
	mu    sync.Mutex
	root  string
	built sync.Map // name -> *guestBuild, whose path is the filters folder
}

// TestMain removes the examples' builds after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if examples.root != "" {
		os.RemoveAll(examples.root)
	}
	os.Exit(code)
}

// exampleFilters builds wasm-sdk/examples/<name> once and returns a filters
// folder holding it alone, with the example's filter.json.
func exampleFilters(tb testing.TB, name string) string {
	tb.Helper()
	v, _ := examples.built.LoadOrStore(name, &guestBuild{})
	b := v.(*guestBuild)
	b.once.Do(func() { b.path, b.err = buildExample(name) })
	if b.err != nil {
		tb.Fatalf("build example %s: %v", name, b.err)
	}
	return b.path
}

func buildExample(name string) (string, error) {
	examples.mu.Lock()
	if examples.root == "" {
		dir, err := os.MkdirTemp("", "vitrine-examples-")
		if err != nil {
			examples.mu.Unlock()
			return "", err
		}
		examples.root = dir
	}
	root := examples.root
	examples.mu.Unlock()
	dir := filepath.Join(root, name+"-filters")
	out := filepath.Join(dir, name)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", filepath.Join(out, "filter.wasm"), "./examples/"+name)
	cmd.Dir = filepath.Join("..", "wasm-sdk")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, b)
	}
	m, err := os.ReadFile(filepath.Join("..", "wasm-sdk", "examples", name, "filter.json"))
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(out, "filter.json"), m, 0o644)
}

// exampleListener loads the example name into a host (with cfg changed by
// mod, if not nil) and returns its listener.
func exampleListener(tb testing.TB, name string, mod func(*Config)) Listener {
	tb.Helper()
	set := newHost(tb, exampleFilters(tb, name), mod).Current()
	for _, l := range set.Listeners() {
		if l.Name() == name {
			return l
		}
	}
	tb.Fatalf("%s not loaded: %+v", name, set.Status())
	return Listener{}
}
