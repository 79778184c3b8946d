package filters

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bundleOf reads a folder written by kit as a Bundle.
func bundleOf(tb testing.TB, dir string) Bundle {
	tb.Helper()
	m, err := os.ReadFile(filepath.Join(dir, "filter.json"))
	if err != nil {
		tb.Fatal(err)
	}
	w, err := os.ReadFile(filepath.Join(dir, "filter.wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	var name struct{ Name string }
	_ = json.Unmarshal(m, &name)
	return Bundle{Name: name.Name, Version: BundleVersion(m, w), Manifest: m, Wasm: w}
}

// TestDeploy loads bundles beside a folder: a bundle's name wins over the
// folder's, a canary loads under its own key (and is no transformation
// name of its own), a changed bundle swaps in, and Deploy without them
// brings the folder back.
func TestDeploy(t *testing.T) {
	t.Parallel()
	dir, src := t.TempDir(), t.TempDir()
	kit(t, dir, "a", KindTransformation, "invert", nil)
	kit(t, dir, "b", KindTransformation, "invert", nil)
	h := newHost(t, dir, func(c *Config) { c.RetireGrace = time.Millisecond })
	ctx := context.Background()
	one := bundleOf(t, kit(t, src, "a", KindTransformation, "nothing", nil))
	two := bundleOf(t, kit(t, filepath.Join(src, "v2"), "a", KindTransformation, "invert", map[string]any{"version": "2"}))

	w, err := h.Deploy(map[string]Bundle{"a": one, CanaryKey("a"): two})
	if err != nil {
		t.Fatal(err)
	}
	w.Wait(ctx)
	set := h.Current()
	st := map[string]Status{}
	for _, s := range set.Status() {
		st[s.Name] = s
	}
	if s := st["a"]; s.Source != SourceAPI || s.Version != one.Version || s.ContentHash != one.Version[:32] || s.State != StateReady {
		t.Fatalf("a: %+v, want the deployed version", s)
	}
	if s := st["b"]; s.Source != SourceDir || s.Version != "" {
		t.Fatalf("b: %+v, want the folder", s)
	}
	if s := st[CanaryKey("a")]; s.Source != SourceAPI || s.Version != two.Version || s.State != StateReady {
		t.Fatalf("canary: %+v", s)
	}
	if got := set.TransformationNames(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("names %v, want a and b", got)
	}
	c, ok := set.Transformation(CanaryKey("a"))
	if !ok || c.ContentHash() != two.Version[:32] {
		t.Fatal("the canary is not loaded under its key")
	}

	// The same bundles again: nothing loads again.
	a, _ := set.Transformation("a")
	w, _ = h.Deploy(map[string]Bundle{"a": one, CanaryKey("a"): two})
	w.Wait(ctx)
	if again, _ := h.Current().Transformation("a"); again.Filter != a.Filter {
		t.Fatal("an unchanged bundle was loaded again")
	}

	// No bundles: the folder serves again.
	w, _ = h.Deploy(nil)
	w.Wait(ctx)
	for _, s := range h.Current().Status() {
		if s.Name == "a" && (s.Source != SourceDir || s.State != StateReady) {
			t.Fatalf("after the deployment ended, a is %+v; want the folder again", s)
		}
		if IsCanaryKey(s.Name) {
			t.Fatalf("the canary is still listed: %+v", s)
		}
	}
}

// TestCheck refuses a bundle that does not compile, or whose files do not
// make its version, with a RefusedError, and accepts a good one.
func TestCheck(t *testing.T) {
	t.Parallel()
	h := newHost(t, "", nil)
	ctx := context.Background()
	good := bundleOf(t, kit(t, t.TempDir(), "a", KindTransformation, "invert", nil))
	if m, err := h.Check(ctx, good); err != nil || m.Name != "a" {
		t.Fatalf("Check(good) = %v, %v", m, err)
	}
	cases := map[string]Bundle{
		"not WebAssembly": {Name: "a", Manifest: good.Manifest, Wasm: []byte("\x00asm but not really")},
		"wrong version":   {Name: "a", Version: one64("f"), Manifest: good.Manifest, Wasm: good.Wasm},
		"another name":    {Name: "b", Manifest: good.Manifest, Wasm: good.Wasm},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := h.Check(ctx, b)
			var re *RefusedError
			if !errors.As(err, &re) || re.HTTPStatus() != 400 || re.PublicMessage() == "" {
				t.Fatalf("Check = %v, want a RefusedError", err)
			}
		})
	}
}

func one64(c string) string {
	s := ""
	for range 64 {
		s += c
	}
	return s
}

// TestCheckCompilesIntoCache: Check compiles a pushed module into the
// host's compilation cache, so that the load Deploy queues next finds it
// there instead of compiling it a second time (a 1.9 MB Go guest: 1.1 s
// compiling again, 45 ms from the cache).
func TestCheckCompilesIntoCache(t *testing.T) {
	t.Parallel()
	dir, src, cache := t.TempDir(), t.TempDir(), t.TempDir()
	h := newHost(t, dir, func(c *Config) { c.CacheDir = cache })
	entries := func() int {
		n := 0
		_ = filepath.WalkDir(cache, func(_ string, d fs.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	if n := entries(); n != 0 {
		t.Fatalf("%d entries in a new cache", n)
	}
	b := bundleOf(t, kit(t, src, "a", KindTransformation, "invert", nil))
	if _, err := h.Check(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if entries() == 0 {
		t.Fatal("Check left nothing in the host's compilation cache")
	}
}

// TestDeployNotGranted: a bundle asking for a capability this host does not
// grant passes Check (what a host grants is its own) and, deployed, is
// unavailable here with its version and the reason: the host stays ready,
// and the filter's requests (a fatal listener's events too) fail with a
// KindUnavailable error, 503 with Retry-After, naming the capability.
func TestDeployNotGranted(t *testing.T) {
	t.Parallel()
	h := newHost(t, "", nil)
	ctx := context.Background()
	src := t.TempDir()
	clock := map[string]any{"capabilities": []string{"clock"}}
	tr := bundleOf(t, kit(t, src, "a", KindTransformation, "invert", clock))
	li := bundleOf(t, kit(t, src, "l", KindListener, "nothing", map[string]any{"capabilities": []string{"clock"}, "events": []string{"images.post"}}))
	if _, err := h.Check(ctx, tr); err != nil {
		t.Fatalf("Check of a bundle asking for a capability this host does not grant: %v", err)
	}
	w, err := h.Deploy(map[string]Bundle{"a": tr, "l": li})
	if err != nil {
		t.Fatal(err)
	}
	w.Wait(ctx)
	set := h.Current()
	for _, s := range set.Status() {
		if s.State != StateUnavailable || s.Target == "" || !strings.Contains(s.Error, `capability "clock"`) {
			t.Fatalf("%s: %+v, want unavailable with its target and reason", s.Name, s)
		}
	}
	if s := set.Status()[0]; s.Name != "a" || s.Target != tr.Version {
		t.Fatalf("a's target %q, want %s", s.Target, tr.Version)
	}
	if u := set.Unready(); len(u) != 0 {
		t.Fatalf("Unready = %v; a filter deployed through the API that this host cannot run must not hold readiness", u)
	}
	p, ok := set.Unavailable("a")
	if !ok {
		t.Fatal("Unavailable(a) = false")
	}
	var fe *Error
	if err := p.Err(); !errors.As(err, &fe) || fe.HTTPStatus() != 503 || fe.RetryAfter() == 0 || !strings.Contains(fe.PublicMessage(), `"clock"`) {
		t.Fatalf("Unavailable(a).Err() = %v, want 503 with Retry-After naming the capability", err)
	}
	if _, ok := set.Unavailable("nothing"); ok {
		t.Fatal("Unavailable of an unknown name")
	}
	if pl := set.PendingListeners(); len(pl) != 1 || pl[0].Name() != "l" || !errors.Is(pl[0].Err(), ErrUnavailable) {
		t.Fatalf("PendingListeners = %+v, want the fatal listener l failing with ErrUnavailable", pl)
	}
}
