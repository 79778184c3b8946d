package api_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// BenchmarkUploadAnalysis POSTs a new 3-megapixel JPEG per op with each
// analysis on alone, all off and all on, and reports the upload's cost in
// milliseconds per megapixel (e2e/README.md, "Image analysis: cost").
//
//	go test ./api -run '^$' -bench BenchmarkUploadAnalysis -benchtime 10x
func BenchmarkUploadAnalysis(b *testing.B) {
	const w, h = 2000, 1500
	on, off := true, false
	none := api.Analysis{EXIF: &off, Placeholders: &off, Colors: &off, PerceptualHash: &off}
	for _, c := range []struct {
		name string
		set  func(a *api.Analysis)
	}{
		{"Off", func(*api.Analysis) {}},
		{"EXIF", func(a *api.Analysis) { a.EXIF = &on }},
		{"Placeholders", func(a *api.Analysis) { a.Placeholders = &on }},
		{"Colors", func(a *api.Analysis) { a.Colors = &on }},
		{"PerceptualHash", func(a *api.Analysis) { a.PerceptualHash = &on }},
		{"All", func(a *api.Analysis) { *a = api.Analysis{} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.Analysis = none
			c.set(&cfg.Analysis)
			s := newAnalysisBenchServer(b, cfg)
			imgs := make([][]byte, b.N)
			for i := range imgs {
				imgs[i] = benchJPEG(b, w, h, i)
			}
			b.ResetTimer()
			for i := range b.N {
				s.upload(b, imgs[i])
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/(w*h/1e6), "ms/MP")
		})
	}
}

// benchJPEG is a w x h JPEG that differs for every seed.
func benchJPEG(b *testing.B, w, h, seed int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x + seed), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func newAnalysisBenchServer(b *testing.B, cfg api.Config) *benchServer {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(dir, "vitrine.db"), storage.Options{Secret: []byte("bench-secret")})
	if err != nil {
		b.Fatal(err)
	}
	blobs, err := storage.OpenBlobs(ctx, "file://"+filepath.Join(dir, "images"))
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := api.New(cfg, api.Deps{DB: db, Blobs: blobs, Engine: eng})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	b.Cleanup(func() {
		hs.Close()
		blobs.Close()
		db.Close()
	})
	return &benchServer{url: hs.URL, client: hs.Client()}
}
