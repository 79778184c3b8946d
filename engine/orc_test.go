package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestOrcGuard: where libvips runs its vector paths on liborc (before
// 8.15), its compiles and frees of orc programs go through orcguard.c's
// lock, and operations that have such a path (reducev here) built and
// disposed from many goroutines at once leave the process alive. With the
// vector paths on and the guard's functions renamed (so libvips called
// liborc's directly), the stress crashed the test process in 4 runs of 4
// within its 10 s (glibc's "malloc(): unaligned fastbin chunk detected",
// "double free or corruption (fasttop)", a SIGSEGV); the checks of the
// binding fail every time.
func TestOrcGuard(t *testing.T) {
	if orcGuard == orcUnused {
		t.Skipf("libvips %d.%d runs no vector path on liborc", vips.MajorVersion, vips.MinorVersion)
	}
	if orcGuard != orcSerialised {
		t.Fatalf("liborc: %s; want %s: libvips' calls to orc_program_compile and orc_program_free do not reach orcguard.c",
			orcGuard, orcSerialised)
	}
	before := orcGuardedCalls()
	d := 10 * time.Second
	if testing.Short() {
		d = time.Second
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var ops atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				img, err := vips.Black(8+i%5, 16+g)
				if err != nil {
					t.Error(err)
					return
				}
				// A vertical-only shrink of an 8-bit image is libvips'
				// reducev, which compiles orc programs when it is built
				// and frees them when it is disposed.
				err = img.ResizeWithVScale(1, 0.37+float64(i%3)/10, vips.KernelLanczos3)
				img.Close()
				if err != nil {
					t.Error(err)
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	calls := orcGuardedCalls() - before
	t.Logf("%d reducev operations built and disposed by 8 goroutines in %s; %d orc compiles and frees through the guard", ops.Load(), d, calls)
	if calls == 0 {
		t.Fatal("no orc compile or free went through orcguard.c")
	}
}
