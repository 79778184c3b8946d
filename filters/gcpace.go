package filters

import (
	"context"
	"os"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// gcPaceInterval is how often PaceGC looks again.
const gcPaceInterval = time.Second

// PaceGC, while busy says guest code runs (or ran since it last asked),
// lets Go's heap grow to at least floor bytes between garbage collections
// (and to twice the live heap, Go's default, when that is more); otherwise
// it leaves Go's default pacing. It does nothing when floor is 0 or the
// operator set GOGC, and gives Go's default back when ctx ends.
//
// Why: every collection stops the world twice, and a stop waits for every
// goroutine to reach a safe point. A goroutine running compiled guest code
// reaches one only at its next loop back-edge, on a thread at low priority
// (Config.Policy) that the kernel may leave waiting for tens of milliseconds
// while native work holds the cores, and meanwhile every other goroutine
// waits too. The server's live Go heap is tens of megabytes (images live in
// libvips' memory, not Go's), so a thumbnail workload collects about once a
// second under Go's default; with the floor, every few seconds
// (README.md, Admission and isolation).
func PaceGC(ctx context.Context, floor uint64, busy func() bool) {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return
	}
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := 100
	defer func() {
		if set != 100 {
			debug.SetGCPercent(100)
		}
	}()
	t := time.NewTicker(gcPaceInterval)
	defer t.Stop()
	for {
		p := 100
		if busy() {
			rtmetrics.Read(sample)
			var live uint64
			if sample[0].Value.Kind() == rtmetrics.KindUint64 {
				live = sample[0].Value.Uint64()
			}
			p = gcPercentFor(live, floor)
		}
		if p != set {
			debug.SetGCPercent(p)
			set = p
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gcPercentFor is the GOGC under which a heap of live bytes grows to at
// least floor bytes before the next collection (and never below Go's
// default of 100). It is rounded down to a multiple of 25 so that a live
// heap moving by a few kilobytes does not change it every second.
func gcPercentFor(live, floor uint64) int {
	live = max(live, 1<<20)
	if live*2 >= floor {
		return 100
	}
	p := int((floor-live)*100/live) / 25 * 25
	return max(p, 100)
}

// GuestsBusy returns a busy for PaceGC: true while a guest call of calls
// runs or when one started since the last question.
func GuestsBusy(calls func() (started uint64, running int)) func() bool {
	var last uint64
	return func() bool {
		started, running := calls()
		busy := running > 0 || started != last
		last = started
		return busy
	}
}
