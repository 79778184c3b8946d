package filters

import (
	"context"
	"fmt"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// TestCanaryBucket checks the canary's choice per image: the same subject
// always lands in the same bucket, and 10,000 subjects split near the
// percent asked for.
func TestCanaryBucket(t *testing.T) {
	for _, percent := range []int{1, 10, 50, 90} {
		t.Run(fmt.Sprint(percent), func(t *testing.T) {
			n := 0
			for i := range 10000 {
				s := fmt.Sprintf("alice/%032x", i)
				b := CanaryBucket(s)
				if b < 0 || b > 99 || CanaryBucket(s) != b {
					t.Fatalf("bucket of %s: %d, then %d", s, b, CanaryBucket(s))
				}
				if b < percent {
					n++
				}
			}
			if lo, hi := percent*100-200, percent*100+200; n < lo || n > hi {
				t.Fatalf("%d%% took %d of 10000 subjects", percent, n)
			}
		})
	}
}

func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{5 * mb, 64 * mb, 1175},  // 5 MB grows to 63.75 MB
		{0, 64 * mb, 6300},       // read as 1 MB
		{16 * mb, 64 * mb, 300},  // 16 MB grows to 64 MB
		{32 * mb, 64 * mb, 100},  // twice the live heap reaches the floor
		{200 * mb, 64 * mb, 100}, // never below Go's default
	} {
		if got := gcPercentFor(c.live, c.floor); got != c.want {
			t.Errorf("gcPercentFor(%d MB, %d MB) = %d, want %d", c.live/mb, c.floor/mb, got, c.want)
		}
	}
}

func TestGuestsBusy(t *testing.T) {
	var started uint64
	var running int
	busy := GuestsBusy(func() (uint64, int) { return started, running })
	for i, c := range []struct {
		started uint64
		running int
		want    bool
	}{
		{0, 0, false},
		{1, 1, true},  // a call runs
		{1, 1, true},  // still
		{3, 0, true},  // two more started and ended between questions
		{3, 0, false}, // none since
	} {
		started, running = c.started, c.running
		if got := busy(); got != c.want {
			t.Errorf("question %d (started %d, running %d): busy = %v, want %v", i, c.started, c.running, got, c.want)
		}
	}
}

func gogc() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// waitGOGC waits until GOGC satisfies ok, for at most 10 s.
func waitGOGC(t *testing.T, what string, ok func(uint64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(gogc()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOGC still %d", what, gogc())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPaceGC: the floor raises GOGC while guests are busy, gives Go's
// default back when they are not and when the server stops; GOGC in the
// environment switches it off.
func TestPaceGC(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { PaceGC(ctx, 4<<30, busy.Load); close(done) }()
	waitGOGC(t, "busy, 4 GB floor", func(p uint64) bool { return p > 100 })
	busy.Store(false)
	waitGOGC(t, "idle", func(p uint64) bool { return p == 100 })
	busy.Store(true)
	waitGOGC(t, "busy again", func(p uint64) bool { return p > 100 })
	cancel()
	<-done
	if got := gogc(); got != 100 {
		t.Errorf("GOGC after the server stopped = %d, want 100", got)
	}

	t.Setenv("GOGC", "100")
	PaceGC(t.Context(), 4<<30, func() bool { return true }) // returns at once
	if got := gogc(); got != 100 {
		t.Errorf("GOGC with GOGC set = %d, want 100", got)
	}
}
