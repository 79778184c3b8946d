package filters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// guestCache builds each Go guest under testdata once per source content and
// Go version, in the user cache directory, so repeated test runs skip it.
var guestCache sync.Map // name -> *guestBuild

type guestBuild struct {
	once sync.Once
	path string
	err  error
}

// guest returns the path of testdata/<name> built for wasip1 as a reactor
// (-buildmode=c-shared), the way filter authors build with the standard
// toolchain.
func guest(tb testing.TB, name string) string {
	tb.Helper()
	v, _ := guestCache.LoadOrStore(name, &guestBuild{})
	b := v.(*guestBuild)
	b.once.Do(func() { b.path, b.err = buildGuest(name, "-buildmode=c-shared") })
	if b.err != nil {
		tb.Fatalf("build guest %s: %v", name, b.err)
	}
	return b.path
}

// commandGuest returns the path of testdata/<name> built for wasip1 the
// default way, as a command whose _start runs main and exits.
func commandGuest(tb testing.TB, name string) string {
	tb.Helper()
	v, _ := guestCache.LoadOrStore(name+"#command", &guestBuild{})
	b := v.(*guestBuild)
	b.once.Do(func() { b.path, b.err = buildGuest(name, "-buildmode=exe") })
	if b.err != nil {
		tb.Fatalf("build command guest %s: %v", name, b.err)
	}
	return b.path
}

func buildGuest(name, mode string) (string, error) {
	src, err := os.ReadFile(filepath.Join("testdata", name, "main.go"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(append(src, runtime.Version()...), mode...))
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "vitrine-test-guests")
	out := filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8])+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := out + fmt.Sprintf(".%d.tmp", os.Getpid())
	cmd := exec.Command("go", "build", mode, "-o", tmp, "./testdata/"+name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, b)
	}
	return out, os.Rename(tmp, out)
}

// writeFilter creates the folder <dir>/<name> holding wasm (a file path to
// copy, or raw bytes) and the manifest (a JSON object; name and abi are
// filled in when absent).
func writeFilter(tb testing.TB, dir, name string, wasm any, manifest map[string]any) string {
	tb.Helper()
	fdir := filepath.Join(dir, name)
	if err := os.MkdirAll(fdir, 0o755); err != nil {
		tb.Fatal(err)
	}
	var code []byte
	switch w := wasm.(type) {
	case string:
		b, err := os.ReadFile(w)
		if err != nil {
			tb.Fatal(err)
		}
		code = b
	case []byte:
		code = w
	}
	m := map[string]any{"name": name, "version": "1.0.0", "abi": 1}
	for k, v := range manifest {
		m[k] = v
	}
	mj, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(fdir, "filter.wasm"), code, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fdir, "filter.json"), mj, 0o644); err != nil {
		tb.Fatal(err)
	}
	return fdir
}

// kit writes a folder running the kit guest in mode, with extra manifest
// fields.
func kit(tb testing.TB, dir, name, kind, mode string, extra map[string]any) string {
	m := map[string]any{"kind": kind, "settings": map[string]any{"mode": mode}}
	for k, v := range extra {
		m[k] = v
	}
	if s, ok := extra["settings"].(map[string]any); ok {
		s["mode"] = mode
		m["settings"] = s
	}
	return writeFilter(tb, dir, name, guest(tb, "kit"), m)
}

// quietLogger discards guest log lines and load reasons.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testCacheDir is a compilation cache shared by test runs. Why the wazero
// version (from go.mod) in its name: in a test binary wazero cannot read
// its own version and keys its cache as "dev", so an upgrade must not find
// old entries.
func testCacheDir() string {
	v := "unknown"
	if b, err := os.ReadFile("../go.mod"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/tetratelabs/wazero" {
				v = f[1]
			}
		}
	}
	return filepath.Join(os.TempDir(), "vitrine-test-wazero-cache-"+v)
}

// newHost loads dir with a test configuration; the host is closed when
// the test ends.
func newHost(tb testing.TB, dir string, mod func(*Config)) *Host {
	tb.Helper()
	// Nice 1: the tests' guests compete with the other packages' tests,
	// which go test runs beside them, nearly as equals, so that a call's
	// timeout measures the guest and not the priority (TestWorkerPriority
	// tests the priority itself).
	// The image limits are engine's defaults, which main passes on.
	// CompileTimeout 5 minutes, not the default 1: under -race, beside the
	// other packages' tests on a slow 2-core machine, compiling a Go guest
	// once took over a minute (the tests of the timeout set their own).
	cfg := Config{Dir: dir, Logger: quietLogger(), CacheDir: testCacheDir(), Nice: 1,
		MaxWidth: 32768, MaxHeight: 32768, MaxPixels: 100_000_000, CompileTimeout: 5 * time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	h, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	return h
}
