package filters

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
)

// TestCountersBounded shows that a filter cannot create counter names
// without bound: past maxCounters a new name is refused, existing ones
// still count.
func TestCountersBounded(t *testing.T) {
	var c counters
	for i := 0; i < maxCounters; i++ {
		if !c.add(fmt.Sprintf("c%d", i), 1) {
			t.Fatalf("counter %d refused below the limit", i)
		}
	}
	if c.add("onemore", 1) {
		t.Fatal("a new counter past the limit was accepted")
	}
	if !c.add("c0", 1) || c.snapshot()["c0"] != 2 || len(c.snapshot()) != maxCounters {
		t.Fatalf("existing counter no longer counts: %v", c.snapshot()["c0"])
	}
}

// TestCountersSaturate shows that a counter stops at the int64 bounds
// instead of wrapping around.
func TestCountersSaturate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		start, delta int64
		want         int64
	}{
		{"plain", 40, 2, 42},
		{"negative", 1, -3, -2},
		{"to the top", math.MaxInt64 - 1, 1, math.MaxInt64},
		{"past the top", math.MaxInt64 - 1, 2, math.MaxInt64},
		{"top plus top", math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"past the bottom", math.MinInt64 + 1, -2, math.MinInt64},
		{"bottom plus bottom", math.MinInt64, math.MinInt64, math.MinInt64},
		{"down from the top", math.MaxInt64, -1, math.MaxInt64 - 1},
		{"up from the bottom", math.MinInt64, 1, math.MinInt64 + 1},
		{"zero at the top", math.MaxInt64, 0, math.MaxInt64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var ctr counters
			ctr.add("n", c.start)
			ctr.add("n", c.delta)
			if got := ctr.snapshot()["n"]; got != c.want {
				t.Fatalf("%d + %d = %d, want %d", c.start, c.delta, got, c.want)
			}
		})
	}
}

// TestStatsAddSaturatesInGuest shows the same through stats_add: a guest
// adding MaxInt64 three times, or MinInt64 three times, gets 0 each time and
// a counter at the bound.
func TestStatsAddSaturatesInGuest(t *testing.T) {
	t.Parallel()
	set := loadListeners(t, map[string][2]any{
		"up":   {"count", map[string]any{"settings": map[string]any{"delta": strconv.FormatInt(math.MaxInt64, 10), "times": 3, "report": true}}},
		"down": {"count", map[string]any{"settings": map[string]any{"delta": strconv.FormatInt(math.MinInt64, 10), "times": 3, "report": true}}},
	})
	want := map[string]int64{"up": math.MaxInt64, "down": math.MinInt64}
	for _, l := range set.Listeners() {
		msg := rejection(t, l.Handle(context.Background(), &recEvent{name: "image.get"}))
		if msg != "[0]" {
			t.Fatalf("%s: stats_add answered %s, want [0]", l.Name(), msg)
		}
		if got := set.Counters()[l.Name()]["n"]; got != want[l.Name()] {
			t.Fatalf("%s: counter %d, want %d", l.Name(), got, want[l.Name()])
		}
	}
}
