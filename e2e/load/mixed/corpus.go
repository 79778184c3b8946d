package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/vitrine/vitrine/e2e/load/loadkit"
)

// kind is one sort of source in the corpus.
type kind struct {
	ext  string
	w, h int
}

// kinds, by index modulo 8: half 1080p JPEGs, a quarter 12 MP JPEGs, an
// eighth PNG screenshots and an eighth 1080p WebPs.
var kinds = [8]kind{
	{"jpg", 1920, 1080}, {"jpg", 1920, 1080}, {"jpg", 1920, 1080}, {"jpg", 1920, 1080},
	{"jpg", 4000, 3000}, {"jpg", 4000, 3000},
	{"png", 1600, 1000},
	{"webp", 1920, 1080},
}

// sourceName is the file name of source i in the corpus directory.
func sourceName(i int) string {
	return fmt.Sprintf("m%04d.%s", i, kinds[i%len(kinds)].ext)
}

// ensureCorpus writes the sources 0..n-1 that dir lacks (so a corpus made
// once is reused, by vitrine and by an imgproxy reading the same files).
func ensureCorpus(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		made int
	)
	sem := make(chan struct{}, runtime.NumCPU())
	for i := range n {
		file := filepath.Join(dir, sourceName(i))
		if _, err := os.Stat(file); err == nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			data, err := source(i)
			if err == nil {
				err = os.WriteFile(file, data, 0o644)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("corpus: %s: %w", file, err))
			}
			made++
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	if made > 0 {
		fmt.Fprintf(os.Stderr, "mixed: generated %d sources in %s\n", made, dir)
	}
	return nil
}

// source encodes source i: JPEG q90, PNG, or WebP q90 (through libvips).
func source(i int) ([]byte, error) {
	k := kinds[i%len(kinds)]
	seed := uint32(i) + 1
	var buf bytes.Buffer
	switch k.ext {
	case "png":
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, screenshot(k.w, k.h, seed)); err != nil {
			return nil, fmt.Errorf("png: %w", err)
		}
		return buf.Bytes(), nil
	case "webp":
		if err := jpeg.Encode(&buf, loadkit.Photo(k.w, k.h, seed), &jpeg.Options{Quality: 95}); err != nil {
			return nil, fmt.Errorf("jpeg: %w", err)
		}
		img, err := vips.NewImageFromBuffer(buf.Bytes())
		if err != nil {
			return nil, fmt.Errorf("webp: %w", err)
		}
		defer img.Close()
		p := vips.NewWebpExportParams()
		p.Quality = 90
		out, _, err := img.ExportWebp(p)
		if err != nil {
			return nil, fmt.Errorf("webp: %w", err)
		}
		return out, nil
	default:
		if err := jpeg.Encode(&buf, loadkit.Photo(k.w, k.h, seed), &jpeg.Options{Quality: 90}); err != nil {
			return nil, fmt.Errorf("jpeg: %w", err)
		}
		return buf.Bytes(), nil
	}
}

// screenshot is flat panels and thin text-like rules, as a page or an
// application window is, coloured per seed.
func screenshot(w, h int, seed uint32) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	bg := color.RGBA{uint8(200 + seed%50), 240, uint8(230 + seed%20), 255}
	panel := color.RGBA{40, uint8(60 + seed*7%120), 90, 255}
	ink := color.RGBA{30, 30, 30, 255}
	for y := range h {
		for x := range w {
			c := bg
			switch {
			case y < 60 || x < 240:
				c = panel
			case y%24 < 2 && x%400 < 360 && (x/7+y/24+int(seed))%5 != 0:
				c = ink
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}
