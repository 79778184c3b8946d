package engine

import (
	"context"
	"image/color"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// benignSVG is a 120 x 80 drawing: a red square on the left, a blue circle
// on the right, a gradient fill referenced by #fragment and a data: PNG.
const benignSVG = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="120" height="80" viewBox="0 0 120 80">
  <defs><linearGradient id="g"><stop offset="0" stop-color="#0f0"/><stop offset="1" stop-color="#0f0"/></linearGradient></defs>
  <style>.b { fill: #00f; }</style>
  <rect x="0" y="0" width="120" height="80" fill="#fff"/>
  <rect id="r" x="10" y="20" width="40" height="40" style="fill: #f00"/>
  <circle class="b" cx="90" cy="40" r="20"/>
  <rect x="0" y="70" width="120" height="10" fill="url(#g)"/>
  <use xlink:href="#r" x="0" y="0"/>
</svg>`

// hostile returns the hostile SVG documents, each with what the refusal
// must name. fileURL is a file the test made, srv a loopback server that
// must get no request.
func hostile(fileURL, srv string) []struct{ name, svg, want string } {
	wrap := func(body string) string {
		return `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="64">` + body + `</svg>`
	}
	laughs := `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
		`<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">` +
		`<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;"><!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">` +
		`<!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;"><!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">` +
		`<!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]>` +
		`<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><text y="20">&lol9;</text></svg>`
	return []struct{ name, svg, want string }{
		{"script", wrap(`<script>fetch("` + srv + `/script")</script><rect width="64" height="64"/>`), "a <script> element"},
		{"event handler", wrap(`<rect width="64" height="64" onload="fetch('` + srv + `/onload')"/>`), "event handler attribute onload"},
		{"external entity", `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "` + fileURL + `">]>` +
			`<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><text y="20">&x;</text></svg>`, "a DOCTYPE that declares entities"},
		{"billion laughs", laughs, "a DOCTYPE that declares entities"},
		{"external DTD", `<!DOCTYPE svg SYSTEM "` + srv + `/dtd">` + wrap(``), "a DOCTYPE naming an external DTD"},
		{"image file", wrap(`<image href="` + fileURL + `" width="64" height="64"/>`), `the reference "` + fileURL + `" on <image>`},
		{"image http", wrap(`<image xlink:href="` + srv + `/image.png" width="64" height="64"/>`), "on <image>"},
		{"image relative", wrap(`<image href="secret.png" width="64" height="64"/>`), `the reference "secret.png"`},
		{"image svg data", wrap(`<image href="data:image/svg+xml;base64,PHN2Zy8+" width="64" height="64"/>`), "data:image/svg+xml"},
		{"use external", wrap(`<use href="` + srv + `/sprite.svg#a"/>`), "on <use>"},
		{"use data", wrap(`<use href="data:image/png;base64,AAAA"/>`), "on <use>"},
		{"feImage", wrap(`<filter id="f"><feImage href="` + fileURL + `"/></filter><rect width="64" height="64" filter="url(#f)"/>`), "on <feImage>"},
		{"xinclude", `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xi="http://www.w3.org/2001/XInclude" width="64" height="64">` +
			`<text><xi:include href="` + fileURL + `" parse="text"/></text></svg>`, "on <include>"},
		{"foreignObject", wrap(`<foreignObject width="64" height="64"><div xmlns="http://www.w3.org/1999/xhtml">x</div></foreignObject>`), "a <foreignObject> element"},
		{"xhtml", wrap(`<iframe xmlns="http://www.w3.org/1999/xhtml" src="` + srv + `/iframe"/>`), "the XHTML element <iframe>"},
		{"css import", wrap(`<style>@import url("` + srv + `/a.css");</style>`), "a CSS @import"},
		{"css url", wrap(`<style>rect { fill: url(` + srv + `/p.svg#p) }</style><rect width="64" height="64"/>`), "the reference url(" + srv},
		{"css escape", wrap(`<style>rect { fill: \75rl(x) }</style>`), "a CSS escape"},
		{"style attribute url", wrap(`<rect width="64" height="64" style="fill: url('` + fileURL + `')"/>`), "the reference url(" + fileURL},
		{"attribute url", wrap(`<rect width="64" height="64" mask="url(` + srv + `/m.svg#m)"/>`), "the reference url("},
		{"stylesheet PI", `<?xml-stylesheet href="` + srv + `/s.css"?>` + wrap(``), "the processing instruction <?xml-stylesheet?>"},
		{"xml:base", wrap(`<g xml:base="` + srv + `/"><use href="#a"/></g>`), "xml:base on <g>"},
		{"animated href", wrap(`<a href="#x"><set attributeName="href" to="` + srv + `/x"/></a>`), "an animation of href"},
		{"javascript link", wrap(`<a href="javascript:fetch('` + srv + `/js')"><rect width="9" height="9"/></a>`), `the reference "javascript:`},
		{"undefined entity", wrap(`<text>&nbsp;</text>`), "not well-formed XML"},
		{"not svg root", `<html><svg xmlns="http://www.w3.org/2000/svg"/></html>`, "the root element is <html>"},
	}
}

// TestSVGRefused runs every hostile SVG through upload (Inspect) and render
// (Process, as for a stored image): each is refused with a 415 naming what
// was found before libvips sees the bytes, and the loopback server gets no
// request.
func TestSVGRefused(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		t.Errorf("the server got a request: %s", r.URL)
	}))
	defer srv.Close()
	secret := filepath.Join(t.TempDir(), "secret.png")
	if err := os.WriteFile(secret, source(t, 64, 64, "png", false), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Config{Uploads: Uploads{SVG: true}})
	for _, tc := range hostile("file://"+secret, srv.URL) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Inspect(context.Background(), []byte(tc.svg))
			var ee *Error
			if !asError(err, &ee) || ee.HTTPStatus() != http.StatusUnsupportedMediaType || !strings.Contains(ee.PublicMessage(), tc.want) ||
				!strings.HasPrefix(ee.PublicMessage(), "SVG refused: ") {
				t.Fatalf("upload: %v; want a 415 naming %q", err, tc.want)
			}
			c, _ := e.ParseChain([]string{"resize:width=32"})
			_, err = e.Process(context.Background(), []byte(tc.svg), Request{Chain: c, Format: "png"})
			if !asError(err, &ee) || !strings.Contains(ee.PublicMessage(), tc.want) {
				t.Fatalf("render: %v; want a refusal naming %q", err, tc.want)
			}
		})
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the loopback server", hits.Load())
	}
}

// TestSVGRendered uploads and renders a benign SVG (fragment references, a
// DOCTYPE of the W3C DTD, CSS): the pixels are where the drawing puts them.
func TestSVGRendered(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Uploads: Uploads{SVG: true}})
	info, err := e.Inspect(context.Background(), []byte(benignSVG))
	if err != nil || info.Ext != "svg" || info.Mime != "image/svg+xml" || info.Width != 120 || info.Height != 80 {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	res, err := e.Process(context.Background(), []byte(benignSVG), Request{Source: info})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ext != "svg" || string(res.Data) != benignSVG {
		t.Errorf("no transformation: %s, want the stored SVG", res.Ext)
	}
	c, _ := e.ParseChain([]string{"resize:width=240"})
	res, err = e.Process(context.Background(), []byte(benignSVG), Request{Chain: c, Source: info})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ext != "png" || res.Width != 240 || res.Height != 160 {
		t.Fatalf("resize: %s %dx%d, want png 240x160 (SVG has alpha)", res.Ext, res.Width, res.Height)
	}
	writeLook(t, "svg.png", res.Data)
	for _, p := range []struct {
		x, y int
		want color.NRGBA
	}{
		{60, 80, color.NRGBA{255, 0, 0, 255}},      // the red square
		{180, 80, color.NRGBA{0, 0, 255, 255}},     // the blue circle
		{120, 150, color.NRGBA{0, 255, 0, 255}},    // the gradient, by #g
		{120, 20, color.NRGBA{255, 255, 255, 255}}, // background
	} {
		if got := pixel(t, res.Data, p.x, p.y); !near(got, p.want, 8) {
			t.Errorf("pixel (%d,%d) = %v, want %v", p.x, p.y, got, p.want)
		}
	}
	// Off by default: refused naming the switch.
	_, err = newTestEngine(t, Config{}).Inspect(context.Background(), []byte(benignSVG))
	if err == nil || err.Error() != "Unsupported image type: image/svg+xml (uploads.svg is off)" {
		t.Errorf("default config: %v", err)
	}
}

// TestSVGSizeLimits refuses an SVG whose declared size is over the limits
// before anything is rendered.
func TestSVGSizeLimits(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Uploads: Uploads{SVG: true}, Limits: Limits{MaxPixels: 1_000_000}})
	huge := `<svg xmlns="http://www.w3.org/2000/svg" width="30000" height="30000"><rect width="30000" height="30000"/></svg>`
	_, err := e.Inspect(context.Background(), []byte(huge))
	if KindOf(err) != KindTooLarge {
		t.Fatalf("30000x30000 SVG: %v, want too large", err)
	}
	c, _ := e.ParseChain([]string{"resize:width=10"})
	if _, err := e.Process(context.Background(), []byte(huge), Request{Chain: c}); KindOf(err) != KindTooLarge {
		t.Errorf("render: %v, want too large", err)
	}
}

// writeLook writes an output where a person can look at it when
// VITRINE_LOOK names a folder.
func writeLook(t *testing.T, name string, data []byte) {
	if dir := os.Getenv("VITRINE_LOOK"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Error(err)
		}
	}
}
