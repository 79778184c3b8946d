package engine

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestEffortTable prints, for each AVIF and WebP effort, the bytes at
// SSIMULACRA 2 84 (each image's lowest quality scoring at least 84, by
// bisection) and the mean time of a fixed-quality encode (q60 AVIF, q80
// WebP), on the images VITRINE_EFFORT_IMAGES names (space-separated
// paths), each fitted to 1200 pixels wide: the table behind the effort
// defaults (e2e/README.md, Encoder settings). It measures; it asserts
// nothing, and skips without the variable.
func TestEffortTable(t *testing.T) {
	paths := strings.Fields(os.Getenv("VITRINE_EFFORT_IMAGES"))
	if len(paths) == 0 {
		t.Skip("set VITRINE_EFFORT_IMAGES to the images to measure (space-separated paths)")
	}
	type setting struct {
		format string
		effort int
	}
	var settings []setting
	for e := 0; e <= 4; e++ {
		settings = append(settings, setting{"avif", e})
	}
	for _, e := range []int{2, 4, 6} {
		settings = append(settings, setting{"webp", e})
	}
	encode := func(img *vips.ImageRef, s setting, q int) []byte {
		var buf []byte
		var err error
		if s.format == "avif" {
			buf, _, err = img.ExportAvif(&vips.AvifExportParams{Quality: q, Bitdepth: 8, Effort: s.effort, StripMetadata: true})
		} else {
			p := vips.NewWebpExportParams()
			p.Quality, p.ReductionEffort, p.StripMetadata = q, s.effort, true
			buf, _, err = img.ExportWebp(p)
		}
		if err != nil {
			t.Fatal(err)
		}
		return buf
	}
	bytesAt := make([]int, len(settings))
	times := make([]time.Duration, len(settings))
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := vips.NewThumbnailWithSizeFromBuffer(src, 1200, 100000, vips.InterestingNone, vips.SizeDown)
		if err != nil {
			t.Fatal(err)
		}
		if err := toSRGB8(img); err != nil {
			t.Fatal(err)
		}
		if err := copyMemory(img); err != nil {
			t.Fatal(err)
		}
		ref, _, err := img.ExportPng(&vips.PngExportParams{Compression: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range settings {
			lo, hi := 1, 100 // the lowest quality scoring at least 84 lies in (lo, hi]
			var best []byte
			for lo < hi {
				mid := (lo + hi) / 2
				out := encode(img, s, mid)
				score, err := Compare(ref, out)
				if err != nil {
					t.Fatal(err)
				}
				if score >= 84 {
					hi, best = mid, out
				} else {
					lo = mid + 1
				}
			}
			if best == nil {
				best = encode(img, s, hi)
			}
			bytesAt[i] += len(best)
			fixed := map[string]int{"avif": 60, "webp": 80}[s.format]
			start := time.Now()
			for range 3 {
				encode(img, s, fixed)
			}
			times[i] += time.Since(start) / 3
		}
		img.Close()
	}
	var b strings.Builder
	b.WriteString("\n| format, effort | bytes at score 84, total | fixed-quality encode, mean per image |\n|---|---|---|\n")
	for i, s := range settings {
		b.WriteString("| " + s.format + " " + strconv.Itoa(s.effort) + " | " + strconv.Itoa(bytesAt[i]) + " | " +
			strconv.FormatInt((times[i]/time.Duration(len(paths))).Milliseconds(), 10) + " ms |\n")
	}
	t.Log(b.String())
}
