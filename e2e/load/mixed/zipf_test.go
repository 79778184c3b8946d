package main

import (
	"math"
	"slices"
	"testing"
)

// TestZipfSequence checks that the list follows the distribution asked for:
// the most frequent pair's share is 1/H(N,s), the second's half of it at
// s=1, s=0 is uniform, and a seed always gives the same list.
func TestZipfSequence(t *testing.T) {
	const nsrc, count = 40, 200000
	n := nsrc * len(chains)
	for _, s := range []float64{0, 1, 1.2} {
		seq := zipfSequence(nsrc, s, 3, count)
		freq := map[item]int{}
		for _, it := range seq {
			freq[it]++
		}
		counts := make([]int, 0, len(freq))
		for _, c := range freq {
			counts = append(counts, c)
		}
		slices.Sort(counts)
		slices.Reverse(counts)
		var h float64
		for k := 1; k <= n; k++ {
			h += 1 / math.Pow(float64(k), s)
		}
		top := float64(counts[0]) / count
		if want := 1 / h; math.Abs(top-want) > 0.15*want+0.002 {
			t.Errorf("s=%g: the most frequent pair has %.4f of the requests, want about %.4f", s, top, want)
		}
		if s == 1 {
			if r := float64(counts[1]) / float64(counts[0]); r < 0.42 || r > 0.58 {
				t.Errorf("s=1: second/first frequency %.2f, want about 0.5", r)
			}
		}
	}
	a, b := zipfSequence(nsrc, 1, 9, 1000), zipfSequence(nsrc, 1, 9, 1000)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave two different lists")
	}
	if slices.Equal(a, zipfSequence(nsrc, 1, 10, 1000)) {
		t.Error("two seeds gave the same list")
	}
	repeat, distinct := stats([]item{{0, 0}, {1, 0}, {0, 0}, {0, 1}})
	if repeat != 0.25 || distinct != 3 {
		t.Errorf("stats: repeat %g, distinct %d, want 0.25, 3", repeat, distinct)
	}
}
