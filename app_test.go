package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// testApp returns an App on the embedded default in a fresh data directory,
// listening on a free loopback port, with extra YAML configuration, and a
// channel that receives its address once it listens.
func testApp(t *testing.T, yaml string) (*App, <-chan string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "vitrine.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	a := New(cfg, dir, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	a.shutdownVips = func() {} // why: libvips is the process's, and other tests here use it
	addr := make(chan string, 1)
	a.listening = func(ad net.Addr) { addr <- "http://" + ad.String() }
	return a, addr
}

// TestAppStartFailureUnwinds starts on a port already taken: Run fails
// naming it, and every part it had opened is closed again (no goroutine
// left, the database closed).
func TestAppStartFailureUnwinds(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	a, _ := testApp(t, "")
	a.cfg.Listen = taken.Addr().String()
	err = a.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Run on a busy port = %v", err)
	}
	if a.st == nil || a.st.db == nil {
		t.Fatal("the stores were never opened: the test does not reach the listener")
	}
	if err := a.st.db.Ping(context.Background()); err == nil {
		t.Error("the database is still open after a failed start")
	}
}

// TestAppRunStops serves, answers probes, and returns nil once its
// context ends, with every worker joined and nothing left running.
func TestAppRunStops(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, addr := testApp(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	base := <-addr
	waitStatus(t, base+"/readyz", http.StatusOK)
	for _, p := range []string{"/healthz", "/status"} {
		if code := get(t, base+p); code != http.StatusOK {
			t.Errorf("GET %s = %d", p, code)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after its context ended = %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still listening after Run returned")
	}
}

// TestAppReadiness: /readyz answers 503 naming a filter that failed and
// that a request may need (a transformation), 200 when only an optional
// listener failed.
func TestAppReadiness(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		status         int
	}{
		{"transformation", `"kind": "transformation"`, http.StatusServiceUnavailable},
		{"fatal listener", `"kind": "listener", "events": ["image.get"]`, http.StatusServiceUnavailable},
		{"optional listener", `"kind": "listener", "events": ["image.get"], "fatal": false`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fdir := filepath.Join(t.TempDir(), "broken")
			if err := os.MkdirAll(fdir, 0o755); err != nil {
				t.Fatal(err)
			}
			manifest := `{"name": "broken", "version": "1.0.0", "abi": 1, ` + tc.manifest + `}`
			if err := os.WriteFile(filepath.Join(fdir, "filter.json"), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			// Not a WebAssembly module: refused when compiled, manifest read.
			if err := os.WriteFile(filepath.Join(fdir, "filter.wasm"), []byte("\x00asm\x01\x00\x00\x00garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
			a, addr := testApp(t, "filters:\n  dir: "+filepath.Dir(fdir)+"\n")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			defer func() { cancel(); <-done }()
			base := <-addr
			<-a.fh.Initial()
			body := waitStatus(t, base+"/readyz", tc.status)
			// Until the first sync of deployed filters ends, /readyz says
			// that; then it names the folder's broken filter.
			for deadline := time.Now().Add(10 * time.Second); tc.status != http.StatusOK &&
				strings.Contains(body, "still loading") && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				body = waitStatus(t, base+"/readyz", tc.status)
			}
			if tc.status != http.StatusOK && !strings.Contains(body, "broken") {
				t.Errorf("/readyz does not say which filter: %q", body)
			}
		})
	}
}

// get returns the status of GET url.
func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitStatus polls url until it answers status (10 s at most) and returns
// the body.
func waitStatus(t *testing.T, url string, status int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == status {
				return string(b)
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s = %d %q, want %d", url, resp.StatusCode, b, status)
			}
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRaiseGOMAXPROCSKeepsTheOperators: GOMAXPROCS set in the environment
// is left as the operator set it.
func TestRaiseGOMAXPROCSKeepsTheOperators(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", strconv.Itoa(before))
	raiseGOMAXPROCS(before + 8)
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS = %d with GOMAXPROCS=%d set, want it unchanged", got, before)
	}
	os.Unsetenv("GOMAXPROCS")
	raiseGOMAXPROCS(before + 8)
	if got := runtime.GOMAXPROCS(0); got != before+8 {
		t.Errorf("GOMAXPROCS = %d unset, want %d", got, before+8)
	}
}
