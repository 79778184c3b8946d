package filters

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kit(t, dir, "a", KindTransformation, "invert", nil)
	kit(t, dir, "b", KindTransformation, "invert", nil)
	h := newHost(t, dir, func(c *Config) { c.RetireGrace = time.Millisecond })
	ctx := context.Background()
	first := h.Current()
	oldA, _ := first.Transformation("a")

	t.Run("unchanged filters are kept", func(t *testing.T) {
		set, err := h.Reload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := set.Transformation("a")
		if a.Filter != oldA.Filter {
			t.Fatal("an unchanged filter was loaded again")
		}
	})

	t.Run("changed, removed and added", func(t *testing.T) {
		kit(t, dir, "a", KindTransformation, "nothing", nil) // new settings: new hash
		if err := os.RemoveAll(filepath.Join(dir, "b")); err != nil {
			t.Fatal(err)
		}
		kit(t, dir, "c", KindTransformation, "invert", nil)
		set, err := h.Reload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(set.TransformationNames(), ","); got != "a,c" {
			t.Fatalf("names = %s", got)
		}
		newA, _ := set.Transformation("a")
		if newA.ContentHash() == oldA.ContentHash() {
			t.Fatal("the content hash did not change with the manifest")
		}
		in := testImage(4, 4, 9)
		out, err := newA.Transform(ctx, in, nil, nil)
		if err != nil || out != in {
			t.Fatalf("new version should leave the image unchanged: %v", err)
		}
		// The old version is retired (its warm instances dropped), yet a
		// caller that resolved it before the reload keeps it: it runs the
		// old version's code however late it calls, never the new one's and
		// never "unloaded".
		oldA.Filter.retire()
		for i := 0; i < 2; i++ {
			out, err := oldA.Transform(ctx, in, nil, nil)
			if err != nil {
				t.Fatalf("old version after retirement: %v", err)
			}
			if out == in {
				t.Fatal("the old version ran the new version's code")
			}
		}
		if n := oldA.Stats().Instances; n != 0 {
			t.Fatalf("a retired filter keeps %d warm instances", n)
		}
	})

	t.Run("a broken new version is refused and the old one serves", func(t *testing.T) {
		good, _ := h.Current().Transformation("c")
		if err := os.WriteFile(filepath.Join(dir, "c", "filter.wasm"), []byte("broken"), 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := h.Reload(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := set.Transformation("c")
		if !ok || c.Filter != good.Filter {
			t.Fatal("the old version of c should keep serving")
		}
		if _, err := c.Transform(ctx, testImage(2, 2, 1), nil, nil); err != nil {
			t.Fatal(err)
		}
		var reason string
		for _, s := range set.Status() {
			if s.Name == "c" {
				reason = s.Error
				if !s.Loaded || s.ContentHash != good.ContentHash() {
					t.Fatalf("status = %+v", s)
				}
			}
		}
		if !strings.Contains(reason, "filter.wasm") {
			t.Fatalf("reason = %q", reason)
		}
	})
}

// TestReloadWhileCalling swaps a filter back and forth while calls run:
// every call succeeds on the version it resolved.
func TestReloadWhileCalling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A generous timeout: a loaded machine (-race, -count) must not turn
	// a slow call into a failure; this test is about reloads.
	slow := map[string]any{"limits": map[string]any{"timeoutMs": 10000}}
	kit(t, dir, "a", KindTransformation, "invert", slow)
	h := newHost(t, dir, func(c *Config) { c.RetireGrace = time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 4)
	done := make(chan struct{})
	for w := 0; w < 4; w++ {
		go func() {
			n := 0
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				tr, ok := h.Current().Transformation("a")
				if !ok {
					errs <- errors.New("a vanished during a reload")
					return
				}
				if _, err := tr.Transform(ctx, testImage(16, 16, uint64(n)), nil, nil); err != nil {
					errs <- err
					return
				}
				n++
			}
		}()
	}
	modes := []string{"nothing", "invert"}
	for i := 0; i < 4; i++ {
		kit(t, dir, "a", KindTransformation, modes[i%2], slow)
		if _, err := h.Reload(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
