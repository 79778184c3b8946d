package engine

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// crossingPath is an SVG of one <path> of n segments between random points
// of a 1000 x 1000 canvas: every segment crosses many others, the costliest
// shape for librsvg's rasteriser.
func crossingPath(n int) string {
	r := rand.New(rand.NewSource(1))
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000"><path d="M0 0`)
	for range n {
		fmt.Fprintf(&b, "L%d %d", r.Intn(1000), r.Intn(1000))
	}
	b.WriteString(`"/></svg>`)
	return b.String()
}

// useBomb is a 3 KB SVG of levels of doubled <use>: 2^levels rectangles.
func useBomb(levels int) string {
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="64"><defs><rect id="l0" width="1" height="1"/>`)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, `<g id="l%d"><use xlink:href="#l%d"/><use xlink:href="#l%d" x="1"/></g>`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `</defs><use xlink:href="#l%d"/></svg>`, levels)
	return b.String()
}

// TestSVGBoundedBeforeRendering refuses drawings too large to render in
// bounded time, each within milliseconds and naming what was too large, and
// accepts a large drawing within the bounds.
func TestSVGBoundedBeforeRendering(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Uploads: Uploads{SVG: true}})
	cycle := `<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><g id="a"><use href="#b"/></g><g id="b"><use href="#a"/></g></svg>`
	deep := useBomb(0)
	deep = strings.Replace(deep, `</defs>`, func() string {
		var b strings.Builder
		for i := 1; i <= 20; i++ {
			fmt.Fprintf(&b, `<g id="d%d"><use href="#%s"/></g>`, i, map[bool]string{true: "l0", false: fmt.Sprintf("d%d", i-1)}[i == 1])
		}
		return b.String() + `</defs><use href="#d20"/>`
	}(), 1)
	var many strings.Builder
	many.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">`)
	for range 100_001 {
		many.WriteString(`<g/>`)
	}
	many.WriteString(`</svg>`)
	for _, c := range []struct{ name, svg, want string }{
		{"5 MB path", crossingPath(580_000), "a <path> of 580001 points (at most 100000 in a document)"},
		{"100,000-segment path", crossingPath(100_000), "a <path> of 100001 points"},
		{"use bomb", useBomb(30), "more than 100000 elements and path points once its <use> elements are expanded"},
		{"use cycle", cycle, "a <use> of #"},
		{"use chain", deep, "more than 16 deep"},
		{"many elements", many.String(), "more than 100000 elements"},
	} {
		start := time.Now()
		_, err := e.Inspect(context.Background(), []byte(c.svg))
		if KindOf(err) != KindUnsupported || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.want)
		}
		t.Logf("%s (%d bytes): refused in %v", c.name, len(c.svg), time.Since(start))
	}
	// Within the bounds: 12 levels of doubled <use> (4,096 rectangles) and
	// a path of 40,000 short segments render.
	var short strings.Builder
	short.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400"><path fill="none" stroke="#000" d="M0 0`)
	for i := range 40_000 {
		fmt.Fprintf(&short, "L%d %d", i%400, i/100)
	}
	short.WriteString(`"/></svg>`)
	for name, svg := range map[string]string{"12 levels of use": useBomb(12), "40,000 short segments": short.String()} {
		c, _ := e.ParseChain([]string{"resize:width=100"})
		if _, err := e.Process(context.Background(), []byte(svg), Request{Chain: c, Format: "png"}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSVGPrefixedAndUTF16 renders a namespace-prefixed SVG and refuses a
// UTF-16 one as an SVG, saying why.
func TestSVGPrefixedAndUTF16(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Uploads: Uploads{SVG: true}})
	prefixed := `<?xml version="1.0"?><svg:svg xmlns:svg="http://www.w3.org/2000/svg" width="40" height="20"><svg:rect width="40" height="20" fill="#f00"/></svg:svg>`
	info, err := e.Inspect(context.Background(), []byte(prefixed))
	if err != nil || info.Mime != "image/svg+xml" || info.Width != 40 || info.Height != 20 {
		t.Errorf("prefixed: %+v, %v", info, err)
	}
	units := utf16.Encode([]rune(benignSVG))
	le := []byte{0xff, 0xfe}
	for _, u := range units {
		le = append(le, byte(u), byte(u>>8))
	}
	_, err = e.Inspect(context.Background(), le)
	if KindOf(err) != KindUnsupported || !strings.Contains(err.Error(), "SVG refused: the document is UTF-16; save it as UTF-8") {
		t.Errorf("UTF-16: %v", err)
	}
}

// TestRenderStopsWithItsRequest cancels a render that takes seconds: it
// answers the context's error, and no libvips thread keeps working on it
// (the process's CPU time in the second after is under a tenth of it).
func TestRenderStopsWithItsRequest(t *testing.T) {
	e := newTestEngine(t, Config{Uploads: Uploads{SVG: true}})
	big := `<svg xmlns="http://www.w3.org/2000/svg" width="4000" height="4000"><rect width="4000" height="4000" fill="#369"/><circle cx="2000" cy="2000" r="1500" fill="#fc0"/></svg>`
	c, err := e.ParseChain([]string{"blur:sigma=60,radius=100"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = e.Process(ctx, []byte(big), Request{Chain: c, Format: "png"})
	if err != context.DeadlineExceeded {
		t.Fatalf("render: %v, want context.DeadlineExceeded", err)
	}
	before := cpuTime()
	time.Sleep(time.Second)
	if used := cpuTime() - before; used > 100*time.Millisecond {
		t.Errorf("%v of CPU in the second after the render answered: libvips went on", used)
	}
}

// TestAnimationStopsWithItsRequest: an animation's frames are computed
// from one decoded strip, which stops giving pixels once the request's
// time is up, so no frame's work goes on after the answer.
func TestAnimationStopsWithItsRequest(t *testing.T) {
	e := newTestEngine(t, Config{})
	c, err := e.ParseChain([]string{"resize:width=1500", "blur:sigma=40,radius=80"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = e.Process(ctx, animatedSource(t, "gif"), Request{Chain: c, Format: "webp"})
	if err != context.DeadlineExceeded {
		t.Fatalf("render: %v, want context.DeadlineExceeded", err)
	}
	before := cpuTime()
	time.Sleep(time.Second)
	if used := cpuTime() - before; used > 100*time.Millisecond {
		t.Errorf("%v of CPU in the second after the render answered: libvips went on", used)
	}
}
