package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/web"
)

// TestPlaygroundPicksAndMeasures: the playground offers every image of the
// user in a picker (not only the one it opened with), shows the original
// beside the preview, and gives the output's bytes and pixels, on the
// page and in the live preview's JSON.
func TestPlaygroundPicksAndMeasures(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	first, second := pngBytes(t, 30), pngBytes(t, 31)
	b.uploadForm("alice", first)
	b.uploadForm("alice", second)
	b.uploadForm("bob", pngBytes(t, 32))
	chain := url.Values{"user": {"alice"}, "image": {md5Hex(first)}, "ext": {"png"}, "s0": {"resize"},
		"s0.width": {"12"}, "s0.height": {"7"}}
	p := b.do(http.MethodGet, "/admin/playground?"+chain.Encode(), nil, nil)
	if p.status != 200 {
		t.Fatalf("playground: %d", p.status)
	}
	picker, _, _ := strings.Cut(p.body[strings.Index(p.body, `<select id="pg-image"`):], "</select>")
	if !strings.Contains(picker, `value="`+md5Hex(first)+`" selected`) || !strings.Contains(picker, `value="`+md5Hex(second)+`"`) ||
		strings.Count(picker, "<option") != 2 {
		t.Fatalf("image picker:\n%s", picker)
	}
	if !strings.Contains(p.body, `id="pg-before"`) || !regexp.MustCompile(`id="pg-size">[0-9.]+ [KMG]?i?B \(\d+ bytes\) · 12 × 7 px<`).MatchString(p.body) {
		t.Fatalf("before image or output size missing:\n%s", p.body[strings.Index(p.body, "Before and after"):])
	}
	// An image the user does not have: the picker falls back to the newest.
	other := url.Values{"user": {"alice"}, "image": {"0123456789abcdef0123456789abcdef"}}
	p = b.do(http.MethodGet, "/admin/playground?"+other.Encode(), nil, nil)
	if !strings.Contains(p.body, `value="`+md5Hex(second)+`" selected`) {
		t.Fatalf("unknown image not replaced by the newest")
	}
	p = b.do(http.MethodGet, "/admin/playground/preview?"+chain.Encode(), nil, nil)
	var got struct{ Preview, Before, Size, Error string }
	if err := json.Unmarshal([]byte(p.body), &got); err != nil || got.Before == "" || !strings.HasSuffix(got.Size, "12 × 7 px") {
		t.Fatalf("preview JSON: %v %+v", err, got)
	}
}

// TestPlaygroundTextAndGravity: the playground's forms, built from GET
// /transformations, offer the text transformation with a multi-line text
// field whose new lines reach the chain, and the gravities of thumbnail.
func TestPlaygroundTextAndGravity(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := gradientPNG(t, 160, 120, false)
	b.uploadForm("alice", data)
	chain := url.Values{"user": {"alice"}, "image": {md5Hex(data)}, "ext": {"png"},
		"s0": {"thumbnail"}, "s0.width": {"100"}, "s0.height": {"100"}, "s0.gravity": {"attention"},
		"s1": {"text"}, "s1.text": {"Tom & Jerry\n<b>two</b>"}, "s1.size": {"12"}}
	p := b.do(http.MethodGet, "/admin/playground?"+chain.Encode(), nil, nil)
	if p.status != 200 {
		t.Fatalf("playground: %d", p.status)
	}
	if !strings.Contains(p.body, `<option value="text">`) {
		t.Error("the text transformation is not offered")
	}
	gravity, _, _ := strings.Cut(p.body[strings.Index(p.body, `<select id="s0-gravity"`):], "</select>")
	for _, g := range []string{"centre", "attention", "entropy", "northwest", "south"} {
		if !strings.Contains(gravity, `value="`+g+`"`) {
			t.Errorf("thumbnail's gravity lacks %s:\n%s", g, gravity)
		}
	}
	if !strings.Contains(gravity, `value="attention" selected`) {
		t.Errorf("the chosen gravity is not selected:\n%s", gravity)
	}
	if !regexp.MustCompile(`<div class="field field-wide"><label for="s1-text">`).MatchString(p.body) ||
		!strings.Contains(p.body, `<textarea id="s1-text" name="s1.text" rows="3"`) ||
		!strings.Contains(p.body, ">Tom &amp; Jerry\n&lt;b&gt;two&lt;/b&gt;</textarea>") {
		t.Errorf("text field:\n%s", p.body[strings.Index(p.body, `id="s1-text"`)-200:][:600])
	}
	if !strings.Contains(p.body, "t[]=text:text=Tom &amp; Jerry\n&lt;b&gt;two&lt;/b&gt;") {
		t.Errorf("query:\n%s", p.body[strings.Index(p.body, `id="pg-query"`):][:400])
	}
	if !regexp.MustCompile(`id="pg-size">[0-9.]+ [KMG]?i?B \(\d+ bytes\) · 100 × 100 px<`).MatchString(p.body) {
		t.Errorf("the chain with a text did not render:\n%s", p.body[strings.Index(p.body, "Before and after"):])
	}
}
