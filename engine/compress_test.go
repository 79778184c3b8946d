package engine

import (
	"slices"
	"testing"
)

// TestWithAutoQuality checks the step the quality parameter adds: named
// target or none, nothing when the chain has a compress step, an error for
// an unknown target whatever the chain, and the caller's slice unchanged.
func TestWithAutoQuality(t *testing.T) {
	e := newTestEngine(t, Config{})
	for _, c := range []struct {
		ts     []string
		target string
		want   []string
	}{
		{nil, "", []string{"compress:level=auto"}},
		{[]string{"resize:width=300"}, "low", []string{"resize:width=300", "compress:level=auto,target=low"}},
		{[]string{"resize:width=300"}, "lossless-like", []string{"resize:width=300", "compress:level=auto,target=lossless-like"}},
		{[]string{"compress:level=50", "resize:width=300"}, "high", []string{"compress:level=50", "resize:width=300"}},
		{[]string{"compress:level=auto,target=medium"}, "", []string{"compress:level=auto,target=medium"}},
	} {
		got, err := WithAutoQuality(c.ts, c.target)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("WithAutoQuality(%q, %q) = %q, %v; want %q", c.ts, c.target, got, err, c.want)
			continue
		}
		chain, err := e.ParseChain(got)
		if err != nil || chain.WantsQuality() == slices.Contains(got, "compress:level=50") {
			t.Errorf("%q: parse error %v, WantsQuality %v", got, err, chain.WantsQuality())
		}
	}
	for _, ts := range [][]string{nil, {"compress:level=50"}} {
		if _, err := WithAutoQuality(ts, "best"); KindOf(err) != KindInvalid {
			t.Errorf("target best on %q: %v, want KindInvalid", ts, err)
		}
	}
	ts := make([]string, 1, 4)
	ts[0] = "resize:width=300"
	got, _ := WithAutoQuality(ts, "")
	got[1] = "changed"
	if ts[:2][1] != "" {
		t.Errorf("WithAutoQuality wrote into the caller's array: %q", ts[:2])
	}
}
