package filters

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestPoolHammer runs many concurrent calls of one filter with distinct
// images of distinct sizes: every output is exactly the inverse of its own
// input (no data crosses calls), the pool never holds more instances than
// its limit, and no goroutine is left behind. Run it with -race.
func TestPoolHammer(t *testing.T) {
	dir := t.TempDir()
	kit(t, dir, "invert", KindTransformation, "invert", map[string]any{"limits": map[string]any{"instances": 3}})
	h := newHost(t, dir, nil)
	tr, _ := h.Current().Transformation("invert")
	before := runtime.NumGoroutine()

	const workers, calls = 12, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				seed := uint64(w*1000 + i)
				in := testImage(5+int(seed%23), 3+int(seed%17), seed)
				out, err := tr.Transform(context.Background(), in, nil, nil)
				if err != nil {
					errs <- err
					return
				}
				if out.Rect != in.Rect {
					errs <- fmt.Errorf("call %d: size %v, want %v", seed, out.Rect, in.Rect)
					return
				}
				for j := range in.Pix {
					want := 255 - in.Pix[j]
					if j%4 == 3 {
						want = in.Pix[j]
					}
					if out.Pix[j] != want {
						errs <- fmt.Errorf("call %d: byte %d = %d, want %d: data crossed calls", seed, j, out.Pix[j], want)
						return
					}
				}
				if n := tr.Stats().Instances; n > 3 {
					errs <- fmt.Errorf("%d instances, the limit is 3", n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := tr.Stats(); st.Calls != workers*calls || st.Errors != 0 || st.Instances > 3 || st.P99Ms < st.P50Ms {
		t.Fatalf("stats = %+v", st)
	}
	// wazero's per-call context watchers end with their calls.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d goroutines after the hammer, %d before", n, before)
	}
}

// TestStartNotCountedAgainstCall: starting a new instance inside a call
// (here made slower than the call's timeout) does not eat that timeout.
func TestStartNotCountedAgainstCall(t *testing.T) {
	t.Parallel()
	tr := loadKit(t, "invert", map[string]any{"limits": map[string]any{"timeoutMs": 100, "instances": 1}})
	p := tr.pool
	p.mu.Lock()
	for _, inst := range p.idle {
		_ = inst.mod.Close(context.Background())
	}
	p.idle = nil
	start := p.instantiate
	p.instantiate = func(ctx context.Context) (*instance, error) {
		time.Sleep(300 * time.Millisecond)
		return start(ctx)
	}
	p.mu.Unlock()
	if _, err := tr.Transform(context.Background(), testImage(8, 8, 1), nil, nil); err != nil {
		t.Fatalf("a call that started its instance: %v", err)
	}
}
