package main

import (
	"math"
	"math/rand/v2"
	"sort"
)

// chain is one transformation chain and output format, as vitrine and
// imgproxy spell it. Both sides use the same encoder settings (q80 JPEG and
// WebP, vitrine's defaults).
type chain struct {
	name     string
	vitrine  string // the t[] parameters, joined with &
	ext      string // vitrine's output extension
	imgproxy string // imgproxy's processing options
	format   string // imgproxy's output extension
}

// chains are the requests of a typical site: thumbnails of two sizes, a
// content-width image in JPEG and a wide one in WebP, and a centred square
// crop scaled down.
var chains = []chain{
	{"thumb150", "t[]=thumbnail:width=150,height=150,fit=outbound", "jpg", "rs:fill:150:150/q:80", "jpg"},
	{"thumb320-webp", "t[]=thumbnail:width=320,height=320,fit=outbound", "webp", "rs:fill:320:320/q:80", "webp"},
	{"w800", "t[]=maxSize:width=800", "jpg", "rs:fit:800:0/q:80", "jpg"},
	{"w1200-webp", "t[]=maxSize:width=1200", "webp", "rs:fit:1200:0/q:80", "webp"},
	{"crop1000-w400", "t[]=crop:width=1000,height=1000,gravity=centre&t[]=maxSize:width=400", "jpg",
		"c:1000:1000:ce/rs:fit:400:0/q:80", "jpg"},
}

// item is one distinct request: a source and a chain.
type item struct{ src, chain int }

// zipfSequence draws count requests over every (source, chain) pair of
// nsrc sources, the pair of rank k (1-based) with probability proportional
// to 1/k^s. The ranks are dealt to the pairs in an order shuffled by seed,
// so the popular requests are spread over sources, sizes and chains.
func zipfSequence(nsrc int, s float64, seed uint64, count int) []item {
	items := make([]item, 0, nsrc*len(chains))
	for i := range nsrc {
		for c := range chains {
			items = append(items, item{i, c})
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	cdf := make([]float64, len(items))
	var sum float64
	for k := range cdf {
		sum += 1 / math.Pow(float64(k+1), s)
		cdf[k] = sum
	}
	seq := make([]item, count)
	for i := range seq {
		u := r.Float64() * sum
		seq[i] = items[min(sort.SearchFloat64s(cdf, u), len(items)-1)]
	}
	return seq
}

// stats are the repeat share of seq (the requests that name an item seen
// before in seq: the hit rate of an unbounded cache that starts empty) and
// the number of distinct items.
func stats(seq []item) (repeat float64, distinct int) {
	seen := map[item]bool{}
	for _, it := range seq {
		seen[it] = true
	}
	if len(seq) == 0 {
		return 0, 0
	}
	return float64(len(seq)-len(seen)) / float64(len(seq)), len(seen)
}
