package engine

import (
	"context"
	"os"
	"testing"
)

// BenchmarkAutoQuality measures what auto quality costs a render (e2e/README.md,
// Perceptual quality: measurements): a photograph (mate-backgrounds' Aqua.jpg when
// installed, else a noisy gradient) resized to 1200 pixels wide as JPEG at
// a fixed q80, with auto quality warm (the answer stored: one encode) and
// cold (the search), and the best of the auto-quality formats warm and
// cold. One render at a time, so that ns/op is one render's latency.
func BenchmarkAutoQuality(b *testing.B) {
	src, err := os.ReadFile("/usr/share/backgrounds/mate/nature/Aqua.jpg")
	if err != nil {
		src = benchJPEG(b, 1920, 1080)
	}
	e := newTestEngine(b, Config{})
	fixed, err := e.ParseChain([]string{"resize:width=1200", "compress:level=80"})
	if err != nil {
		b.Fatal(err)
	}
	auto, err := e.ParseChain([]string{"resize:width=1200", "compress:level=auto"})
	if err != nil {
		b.Fatal(err)
	}
	// The answers a cold render of each format finds, as stored.
	stored := &qualityList{}
	for _, f := range AutoQualityFormats() {
		res, err := e.Process(context.Background(), src, Request{Chain: auto, Format: f})
		if err != nil {
			b.Fatal(err)
		}
		stored.SetQuality(context.Background(), *res.Quality)
	}
	for _, c := range []struct {
		name string
		req  Request
	}{
		{"fixed-q80", Request{Chain: fixed, Format: "jpg"}},
		{"auto-warm", Request{Chain: auto, Format: "jpg", Qualities: stored}},
		{"auto-cold", Request{Chain: auto, Format: "jpg"}},
		{"best-warm", Request{Chain: auto, Format: "jpg", Formats: AutoQualityFormats(), Qualities: stored}},
		{"best-cold", Request{Chain: auto, Format: "jpg", Formats: AutoQualityFormats()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := e.Process(context.Background(), src, c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
