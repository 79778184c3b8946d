package filters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// nestedBlocks is a well-formed transformation module whose
// vitrine_transform is n nested empty blocks: valid, harmless when it runs,
// and slow to compile (wazero's compiler is superlinear in the nesting
// depth: 10,000 blocks took 0.5 s here, 20,000 2-3 s, 40,000 11 s).
func nestedBlocks(n int) []byte {
	body := make([]byte, 0, 3*n+2)
	for range n {
		body = append(body, 0x02, 0x40) // block (no result)
	}
	for range n {
		body = append(body, 0x0b) // end
	}
	return abiModule(append(body, opReturn0...)).bytes()
}

// stuckStart is a well-formed module of kind whose _initialize never
// returns: it compiles at once and never starts.
func stuckStart(kind string) []byte {
	m := abiModule(opReturn0)
	if kind == KindListener {
		m.funcs[1].export = exportOnEvent
	}
	m.funcs = append(m.funcs, wasmFunc{export: "_initialize", body: []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}})
	return m.bytes()
}

// startHost starts loading dir in the background with a test
// configuration; the host is closed when the test ends.
func startHost(tb testing.TB, dir string, mod func(*Config)) *Host {
	tb.Helper()
	cfg := Config{Dir: dir, Logger: quietLogger(), CacheDir: testCacheDir()}
	if mod != nil {
		mod(&cfg)
	}
	h, err := Start(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	return h
}

// statusOf returns the status of the folder name in s.
func statusOf(t *testing.T, s *Set, name string) Status {
	t.Helper()
	for _, st := range s.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %s in %+v", name, s.Status())
	return Status{}
}

// waitState polls until the folder name is in state, and returns the Set
// that shows it.
func waitState(t *testing.T, h *Host, name, state string) *Set {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		set := h.Current()
		if statusOf(t, set, name).State == state {
			return set
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s: %+v", name, state, statusOf(t, set, name))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLoadInBackground follows new filters from "loading" to "ready" or
// "failed": Start returns before anything compiled, a filter with no
// version yet answers 503, one that does not start within the compile
// timeout fails, and failed files are not loaded again until they change.
func TestLoadInBackground(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "stuck", stuckStart(KindTransformation), map[string]any{"kind": KindTransformation})
	writeFilter(t, dir, "fine", abiModule(opReturn0).bytes(), map[string]any{"kind": KindTransformation})
	h := startHost(t, dir, func(c *Config) { c.CompileTimeout = 500 * time.Millisecond })
	ctx := context.Background()

	t.Run("everything is loading at first", func(t *testing.T) {
		set := h.Current()
		// stuck cannot be ready yet; fine, first in the queue, may be.
		if st := statusOf(t, set, "stuck"); st.State != StateLoading || st.Loaded || st.Manifest == nil || st.Manifest.Kind != KindTransformation {
			t.Fatalf("stuck: %+v", st)
		}
		if _, ok := set.Transformation("stuck"); ok {
			t.Fatal("a filter still loading is served")
		}
		p, ok := set.Pending("stuck")
		if !ok {
			t.Fatal("stuck is not pending")
		}
		var fe *Error
		if err := p.Err(); !errors.Is(err, ErrUnavailable) || !errors.As(err, &fe) ||
			fe.HTTPStatus() != http.StatusServiceUnavailable || fe.PublicMessage() != "filter stuck is still loading" {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("a filter that does not start in time fails", func(t *testing.T) {
		set, err := h.Reload(ctx) // waits for the loads under way
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, set, "fine"); st.State != StateReady || !st.Loaded || st.Error != "" {
			t.Fatalf("fine: %+v", st)
		}
		if _, err := mustTransformation(t, set, "fine").Transform(ctx, testImage(2, 2, 1), nil, nil); err != nil {
			t.Fatal(err)
		}
		st := statusOf(t, set, "stuck")
		if st.State != StateFailed || st.Loaded || !strings.Contains(st.Error, "within 500ms (filters.compileTimeout)") {
			t.Fatalf("stuck: %+v", st)
		}
		if _, ok := set.Pending("stuck"); ok {
			t.Fatal("a failed filter is still pending")
		}
	})

	t.Run("a timeout is tried again, other failures are not", func(t *testing.T) {
		writeFilter(t, dir, "broken", []byte("\x00asm but not really"), map[string]any{"kind": KindTransformation})
		set, err := h.Reload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"broken", "stuck"} {
			if st := statusOf(t, set, name); st.State != StateFailed {
				t.Fatalf("%s: %+v", name, st)
			}
		}
		if err := h.StartReload(); err != nil {
			t.Fatal(err)
		}
		set = h.Current()
		if st := statusOf(t, set, "broken"); st.State != StateFailed || !strings.Contains(st.Error, "filter.wasm") {
			t.Fatalf("broken: %+v", st)
		}
		if st := statusOf(t, set, "stuck"); st.State != StateLoading {
			t.Fatalf("stuck: %+v", st)
		}
		set, err = h.Reload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, set, "stuck"); st.State != StateFailed {
			t.Fatalf("stuck: %+v", st)
		}
	})

	t.Run("changed files are", func(t *testing.T) {
		writeFilter(t, dir, "stuck", abiModule(opReturn0).bytes(), map[string]any{"kind": KindTransformation})
		if err := h.StartReload(); err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, h.Current(), "stuck"); st.State != StateLoading {
			t.Fatalf("stuck: %+v", st)
		}
		set, err := h.Reload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, set, "stuck"); st.State != StateReady || !st.Loaded {
			t.Fatalf("stuck: %+v", st)
		}
	})
}

func mustTransformation(t *testing.T, s *Set, name string) Transformation {
	t.Helper()
	tr, ok := s.Transformation(name)
	if !ok {
		t.Fatalf("no transformation %s", name)
	}
	return tr
}

// TestReloadServesOldVersion checks that a filter's old version serves
// while its new files load, and keeps serving when they fail.
func TestReloadServesOldVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Small hand-made modules: they load in milliseconds, even with -race.
	writeFilter(t, dir, "a", abiModule(opReturn0).bytes(), map[string]any{"kind": KindTransformation})
	h := newHost(t, dir, func(c *Config) { c.CompileTimeout = 500 * time.Millisecond })
	ctx := context.Background()
	old := mustTransformation(t, h.Current(), "a")

	writeFilter(t, dir, "a", stuckStart(KindTransformation), map[string]any{"kind": KindTransformation})
	if err := h.StartReload(); err != nil {
		t.Fatal(err)
	}
	set := h.Current()
	st := statusOf(t, set, "a")
	if st.State != StateLoading || !st.Loaded || st.ContentHash != old.ContentHash() {
		t.Fatalf("while loading: %+v", st)
	}
	if a := mustTransformation(t, set, "a"); a.Filter != old.Filter {
		t.Fatal("the old version does not serve while the new one loads")
	}
	if _, ok := set.Pending("a"); ok {
		t.Fatal("a filter with a version serving is pending")
	}

	set = waitState(t, h, "a", StateFailed)
	st = statusOf(t, set, "a")
	if !st.Loaded || st.ContentHash != old.ContentHash() || !strings.Contains(st.Error, "filters.compileTimeout") {
		t.Fatalf("after failing: %+v", st)
	}
	if a := mustTransformation(t, set, "a"); a.Filter != old.Filter {
		t.Fatal("the old version does not serve after the new one failed")
	}
	if _, err := old.Transform(ctx, testImage(2, 2, 1), nil, nil); err != nil {
		t.Fatal(err)
	}

	writeFilter(t, dir, "a", abiModule(append([]byte{0x01}, opReturn0...)).bytes(), map[string]any{"kind": KindTransformation}) // nop; i32.const 0
	set, err := h.Reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st = statusOf(t, set, "a")
	if st.State != StateReady || st.Error != "" || st.ContentHash == old.ContentHash() {
		t.Fatalf("after a good version: %+v", st)
	}
}

// TestPendingListeners checks what a listener still loading means: a
// fatal one fails its events with 503, a non-fatal one is skipped.
func TestPendingListeners(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, fatal := range map[string]bool{"must": true, "may": false} {
		writeFilter(t, dir, name, stuckStart(KindListener), map[string]any{"kind": KindListener,
			"events": []string{"images.post"}, "fatal": fatal, "priority": 3})
	}
	h := startHost(t, dir, func(c *Config) { c.CompileTimeout = 500 * time.Millisecond })
	pending := h.Current().PendingListeners()
	if len(pending) != 1 || pending[0].Name() != "must" || pending[0].Manifest().Priority != 3 {
		t.Fatalf("pending listeners: %+v", pending)
	}
	if err := pending[0].Err(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if _, err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := h.Current().PendingListeners(); len(p) != 0 {
		t.Fatalf("failed listeners still pending: %+v", p)
	}
}

// TestCompileDeadline loads a module that takes seconds to compile with a
// short compile timeout: the filter fails at the deadline, the filter queued
// behind it waits until the abandoned compilation ends (one at a time), and
// the abandoned compilation's result, though it succeeds, is dropped.
func TestCompileDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "hostile", nestedBlocks(15000), map[string]any{"kind": KindTransformation})
	writeFilter(t, dir, "next", abiModule(opReturn0).bytes(), map[string]any{"kind": KindTransformation})
	// No compilation cache: a cached module would not compile at all.
	start := time.Now()
	h, err := Start(context.Background(), Config{Dir: dir, Logger: quietLogger(), CompileTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })

	set := waitState(t, h, "hostile", StateFailed)
	failedAt := time.Since(start)
	if st := statusOf(t, set, "hostile"); st.Loaded || !strings.Contains(st.Error, "filter.wasm did not compile and start within 100ms (filters.compileTimeout)") {
		t.Fatalf("hostile: %+v", st)
	}
	if st := statusOf(t, set, "next"); st.State != StateLoading {
		t.Fatalf("next did not wait for the abandoned compilation: %+v", st)
	}
	waitState(t, h, "next", StateReady)
	t.Logf("hostile failed after %s; its compilation ended and next loaded after %s", failedAt, time.Since(start))
	if st := statusOf(t, h.Current(), "hostile"); st.State != StateFailed || st.Loaded {
		t.Fatalf("the abandoned compilation was not dropped: %+v", st)
	}
}

// TestMaxModuleBytes refuses a module over filters.maxModuleBytes before
// compiling it, naming the limit, in the server and in Check.
func TestMaxModuleBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := abiModule(opReturn0).bytes()
	limit := int64(len(wasm) - 1)
	fdir := writeFilter(t, dir, "big", wasm, map[string]any{"kind": KindTransformation})
	want := fmt.Sprintf("filter.wasm is %d bytes, over the limit of %d bytes (filters.maxModuleBytes)", len(wasm), limit)
	h := startHost(t, dir, func(c *Config) { c.MaxModuleBytes = limit })
	if st := statusOf(t, h.Current(), "big"); st.State != StateFailed || !strings.Contains(st.Error, want) {
		t.Fatalf("big: %+v", st)
	}
	if _, err := Check(context.Background(), Config{Logger: quietLogger(), MaxModuleBytes: limit}, fdir); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("check: %v", err)
	}
	if _, err := Check(context.Background(), Config{Logger: quietLogger()}, fdir); err != nil {
		t.Fatalf("check with the default limit: %v", err)
	}
}

// TestCheckDeadline: `vitrine filter check` compiles synchronously, within
// the compile timeout too.
func TestCheckDeadline(t *testing.T) {
	t.Parallel()
	fdir := writeFilter(t, t.TempDir(), "stuck", stuckStart(KindTransformation), map[string]any{"kind": KindTransformation})
	_, err := Check(context.Background(), Config{Logger: quietLogger(), CompileTimeout: 200 * time.Millisecond}, fdir)
	if err == nil || !strings.Contains(err.Error(), "within 200ms (filters.compileTimeout)") {
		t.Fatalf("err = %v", err)
	}
}

// TestCheckRelativeFolder: `vitrine filter check .` inside the filter's
// folder (and any relative path to it) takes the folder's own name.
func TestCheckRelativeFolder(t *testing.T) {
	root := t.TempDir()
	fdir := writeFilter(t, root, "posterize", abiModule(opReturn0).bytes(), map[string]any{"kind": KindTransformation})
	t.Chdir(fdir)
	for _, dir := range []string{".", "./", "../posterize", "../posterize/", fdir + "/."} {
		m, err := Check(context.Background(), Config{Logger: quietLogger()}, dir)
		if err != nil || m.Name != "posterize" {
			t.Errorf("Check(%q) = %v, %v; want the filter posterize", dir, m, err)
		}
	}
}

func TestConfigLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{MaxModuleBytes: -1}, {CompileTimeout: -time.Second}, {Nice: 20}, {Policy: "batch"}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	d := Config{}.withDefaults()
	if d.MaxModuleBytes != 32<<20 || d.CompileTimeout != time.Minute || d.Policy != PolicyNice || d.Nice != 10 {
		t.Fatalf("defaults: %d %s %q %d", d.MaxModuleBytes, d.CompileTimeout, d.Policy, d.Nice)
	}
	for _, p := range []string{PolicyIdle, PolicyNice} {
		if err := (Config{Policy: p}).Validate(); err != nil {
			t.Errorf("policy %s: %v", p, err)
		}
	}
}

// TestLoadErrorNotCanceled: a module that fails at once is refused with its
// own reason every time, never "context canceled" (the load's deadline is
// cancelled only after its result is taken).
func TestLoadErrorNotCanceled(t *testing.T) {
	t.Parallel()
	fdir := writeFilter(t, t.TempDir(), "broken", []byte("\x00asm but not really"), map[string]any{"kind": KindTransformation})
	for i := range 300 {
		_, err := Check(context.Background(), Config{Logger: quietLogger()}, fdir)
		if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "filter.wasm") {
			t.Fatalf("load %d: %v", i, err)
		}
	}
}
