package engine

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// photo512 is a mate-backgrounds photograph as a lossless PNG 512 wide.
func photo512(t *testing.T, e *Engine, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mateNature, name))
	if err != nil {
		t.Skipf("%v: the photographs come from Debian's mate-backgrounds (make test-deps)", err)
	}
	return run(t, e, b, "png", Env{}, "resize:width=512").Data
}

// qualityHeader parses a Quality header after a search: quality, level, the
// reference's score for a relative target (high(jpg80 81.3+0=81.3)), the
// target, the score and the encodes.
var qualityHeader = regexp.MustCompile(`^q=(\d+); target=(\w[\w-]*)\((?:jpg80 ([\d.]+)[+-][\d.]+(?:, floor [\d.]+|, ceiling [\d.]+)?=)?([\d.]+)\); score=([\d.]+); encodes=(\d)$`)

// TestAutoQuality checks that level=auto meets its target in at most four
// encodes, that a lower target gets a lower quality, that high's target is
// the score of the image's own q80 JPEG, and that a stored answer is used
// with one encode and gives the same output, but not one stored under
// another definition of the level.
func TestAutoQuality(t *testing.T) {
	e := newTestEngine(t, Config{})
	for _, photo := range []string{"Garden.jpg", "Storm.jpg"} {
		t.Run(photo, func(t *testing.T) {
			src := photo512(t, e, photo)
			q80, err := Compare(src, run(t, e, src, "jpg", Env{}, "compress:level=80").Data)
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"jpg", "webp", "avif"} {
				prevQ := 0
				for _, level := range []string{"low", "high"} {
					res := run(t, e, src, format, Env{}, "compress:level=auto,target="+level)
					m := qualityHeader.FindStringSubmatch(res.Headers["Quality"])
					if m == nil {
						t.Fatalf("%s %s: Quality header %q", format, level, res.Headers["Quality"])
					}
					q, _ := strconv.Atoi(m[1])
					target, _ := strconv.ParseFloat(m[4], 64)
					l := qualityLevels[level]
					want := l.score
					if l.ref != 0 {
						// No proxy at 512 pixels: the reference is the image's
						// own q80 JPEG, scored at full size.
						ref, _ := strconv.ParseFloat(m[3], 64)
						if math.Abs(ref-q80) > 0.05 {
							t.Errorf("%s %s: reference %s, q80 JPEG scores %.2f", format, level, m[3], q80)
						}
						want = math.Round(min(max(q80+l.margin, l.floor), l.ceil)*10) / 10
					}
					if m[2] != level || math.Abs(target-want) > 0.05 {
						t.Errorf("%s: header names target %s(%s), want %s(%.1f)", format, m[2], m[4], level, want)
					}
					// The output itself, scored afresh against the lossless source.
					got, err := Compare(src, res.Data)
					if err != nil {
						t.Fatal(err)
					}
					if got < res.Quality.Target {
						t.Errorf("%s %s: q%d scores %.1f, below the target %g", format, level, q, got, target)
					}
					if res.Quality == nil || res.Quality.Quality != q || res.Quality.Format != format || res.Quality.Bytes != len(res.Data) {
						t.Fatalf("%s %s: answer %+v for header %q", format, level, res.Quality, res.Headers["Quality"])
					}
					if q <= prevQ {
						t.Errorf("%s: %s chose q%d, not above low's q%d", format, level, q, prevQ)
					}
					prevQ = q
					t.Logf("%s %-5s %s (%d bytes)", format, level, res.Headers["Quality"], len(res.Data))

					// Stored: one encode, the same quality and bytes.
					c, err := e.ParseChain([]string{"compress:level=auto,target=" + level})
					if err != nil {
						t.Fatal(err)
					}
					again, err := e.Process(context.Background(), src, Request{Chain: c, Format: format, Qualities: &qualityList{answers: []QualityAnswer{*res.Quality}}})
					if err != nil {
						t.Fatal(err)
					}
					if want := "q=" + m[1] + "; stored; target=" + describeStored(level, l, *res.Quality); again.Headers["Quality"] != want || again.Quality != nil {
						t.Errorf("stored render: header %q, answer %v; want %q and none", again.Headers["Quality"], again.Quality, want)
					}
					if len(again.Data) != len(res.Data) {
						t.Errorf("stored render: %d bytes, the search's %d", len(again.Data), len(res.Data))
					}
					// An answer stored under another definition of the level
					// (high's former fixed 84, or another margin) is a start,
					// not the answer: the render searches.
					stale := *res.Quality
					if l.ref == 0 {
						stale.Target++
					} else {
						stale.Key = "high:jpg80+9"
					}
					again, err = e.Process(context.Background(), src, Request{Chain: c, Format: format, Qualities: &qualityList{answers: []QualityAnswer{stale}}})
					if err != nil {
						t.Fatal(err)
					}
					if again.Quality == nil || qualityHeader.FindStringSubmatch(again.Headers["Quality"]) == nil {
						t.Errorf("stale stored answer %+v: header %q, answer %v; want a search", stale, again.Headers["Quality"], again.Quality)
					}
				}
			}
		})
	}
}

// TestAutoQualityRequest checks quality=auto's request form, that an
// explicit compress level wins over it, and the parameter errors.
func TestAutoQualityRequest(t *testing.T) {
	e := newTestEngine(t, Config{AutoQuality: AutoQuality{Target: "medium"}})
	src := source(t, 200, 150, "png", false)
	c, _ := e.ParseChain([]string{"resize:width=100"})
	auto := ""
	res, err := e.Process(context.Background(), src, Request{Chain: c, Format: "jpg", AutoQuality: &auto})
	if err != nil {
		t.Fatal(err)
	}
	if m := qualityHeader.FindStringSubmatch(res.Headers["Quality"]); m == nil || m[2] != "medium" {
		t.Errorf("quality=auto: header %q, want the configured target medium", res.Headers["Quality"])
	}
	c, _ = e.ParseChain([]string{"compress:level=40"})
	res, err = e.Process(context.Background(), src, Request{Chain: c, Format: "jpg", AutoQuality: &auto})
	if err != nil || res.Headers["Quality"] != "" {
		t.Errorf("compress:level=40 with quality=auto: header %q, %v; want none", res.Headers["Quality"], err)
	}
	for _, bad := range []string{"compress:level=auto,target=best", "compress:level=fine", "compress:level=101", "compress:level=50,target=high"} {
		if _, err := e.ParseChain([]string{bad}); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
	if err := (Config{AutoQuality: AutoQuality{Target: "best"}}).Validate(); err == nil {
		t.Error("autoQuality.target best validated")
	}
}

func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ w, h, want int }{{100, 50, 0}, {256, 256, 0}, {257, 10, 1}, {10, 512, 1}, {800, 600, 2}, {1920, 1080, 3}, {4000, 3000, 4}} {
		if got := SizeClass(c.w, c.h); got != c.want {
			t.Errorf("SizeClass(%d, %d) = %d, want %d", c.w, c.h, got, c.want)
		}
	}
}

var proxyHeader = regexp.MustCompile(`^q=(\d+); target=high\(jpg80 ([\d.]+)[+-][\d.]+(?:, floor [\d.]+|, ceiling [\d.]+)?=[\d.]+\); score=([\d.]+); encodes=([1-4])(; extrapolated|; target not met)?; proxy=(mosaic|downscaled)$`)

// TestAutoQualityProxy checks the search on a proxy for an output larger
// than it (a photograph 1200 pixels wide): at most four encodes, the last
// at full size, the output's own score within the proxy's stated tolerance
// of the prediction, and high's reference (q80 JPEG of the mosaic) within
// it of the image's own q80 JPEG (engine/README.md, Perceptual quality).
func TestAutoQualityProxy(t *testing.T) {
	e := newTestEngine(t, Config{})
	b, err := os.ReadFile(filepath.Join(mateNature, "Garden.jpg"))
	if err != nil {
		t.Skipf("%v: the photographs come from Debian's mate-backgrounds (make test-deps)", err)
	}
	src := run(t, e, b, "png", Env{}, "resize:width=1200").Data
	q80, err := Compare(src, run(t, e, src, "jpg", Env{}, "compress:level=80").Data)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range AutoQualityFormats() {
		t.Run(format, func(t *testing.T) {
			res := run(t, e, src, format, Env{}, "compress:level=auto,target=high")
			m := proxyHeader.FindStringSubmatch(res.Headers["Quality"])
			if m == nil {
				t.Fatalf("Quality header %q", res.Headers["Quality"])
			}
			if want := map[bool]string{true: "downscaled", false: "mosaic"}[format == "webp"]; m[6] != want {
				t.Errorf("proxy %s, want %s", m[6], want)
			}
			if ref, _ := strconv.ParseFloat(m[2], 64); math.Abs(ref-q80) > proxyTolerance {
				t.Errorf("reference %.1f, q80 JPEG scores %.1f at full size", ref, q80)
			}
			predicted, _ := strconv.ParseFloat(m[3], 64)
			got, err := Compare(src, res.Data)
			if err != nil {
				t.Fatal(err)
			}
			if d := got - predicted; d < -proxyTolerance || d > proxyTolerance {
				t.Errorf("q%s scores %.1f at full size, the proxy predicted %.1f", m[1], got, predicted)
			}
			if res.Quality == nil || res.Quality.Bytes != len(res.Data) {
				t.Errorf("answer %+v for %d bytes", res.Quality, len(res.Data))
			}
			t.Logf("%s: %s, %.1f at full size (%d bytes)", format, res.Headers["Quality"], got, len(res.Data))
		})
	}
}

// proxyTolerance is how far an output's score may be from its proxy's
// prediction: the widest the byte benchmark measured (e2e/README.md,
// Perceptual quality: measurements).
const proxyTolerance = 5

// TestRelativeTarget checks how high's relative target is keyed, matched
// and stated: a stored answer of high's former fixed score (or another
// definition) does not match, and a clamped target names its bound.
func TestRelativeTarget(t *testing.T) {
	l := qualityLevels["high"]
	key := l.key("high")
	if key != fmt.Sprintf("high:jpg80%+g,floor%g,ceil%g", l.margin, l.floor, l.ceil) {
		t.Errorf("key %q", key)
	}
	for _, c := range []struct {
		a    QualityAnswer
		want bool
	}{{QualityAnswer{Target: 84}, false}, {QualityAnswer{Target: 84, Key: "high:jpg80+9"}, false}, {QualityAnswer{Target: 81.3, Key: key}, true}} {
		if got := l.matches("high", c.a); got != c.want {
			t.Errorf("matches(%+v) = %v", c.a, got)
		}
	}
	if !qualityLevels["low"].matches("low", QualityAnswer{Target: 65}) || qualityLevels["low"].matches("low", QualityAnswer{Target: 65, Key: key}) {
		t.Error("low matches by its score and no key")
	}
	low := &resolved{name: "high", level: l, refScore: l.floor - l.margin - 5, target: l.floor}
	if got, want := low.describe(), fmt.Sprintf("high(jpg80 %.1f%+g, floor %g=%.1f)", low.refScore, l.margin, l.floor, l.floor); got != want {
		t.Errorf("describe %q, want %q", got, want)
	}
	mid := &resolved{name: "high", level: l, refScore: 80, target: 80 + l.margin}
	if got, want := mid.describe(), fmt.Sprintf("high(jpg80 80.0%+g=%.1f)", l.margin, 80+l.margin); got != want {
		t.Errorf("describe %q, want %q", got, want)
	}
}
