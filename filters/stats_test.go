package filters

import (
	"fmt"
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
