package api_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestAutoQualityHeader checks quality=auto and compress:level=auto over
// HTTP: the X-<prefix>-Quality header says what was chosen and why, the
// variant cache answers the second fetch with the same header and bytes,
// and a bad quality value is a 400 naming it.
func TestAutoQualityHeader(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(jpegImage(t, 599, 417))
	header := regexp.MustCompile(`^q=\d+; target=(low|medium|high|lossless-like)\((?:jpg80 [\d.]+[+-][\d.]+(?:, floor [\d.]+|, ceiling [\d.]+)?=)?([\d.]+)\); score=[\d.]+; encodes=[1-4]`)
	for _, c := range []struct{ query, target string }{
		{"?t[]=resize:width=300&quality=auto", "high"},
		{"?t[]=resize:width=300&quality=low", "low"},
		{"?t[]=resize:width=300&t[]=compress:level=auto,target=medium", "medium"},
	} {
		path := "/users/alice/images/" + id + ".webp" + c.query
		r := e.get(e.tokenURL(path, userPriv))
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.query, r.StatusCode, r.body)
		}
		m := header.FindStringSubmatch(r.Header.Get("X-Service-Quality"))
		if m == nil || m[1] != c.target {
			t.Fatalf("%s: X-Service-Quality %q, want target %s", c.query, r.Header.Get("X-Service-Quality"), c.target)
		}
		r2 := e.get(e.tokenURL(path, userPriv))
		if string(r2.body) != string(r.body) || r2.Header.Get("X-Service-Quality") != r.Header.Get("X-Service-Quality") {
			t.Errorf("%s: the cached variant differs", c.query)
		}
	}
	// Another size in the same size class (not in the variant cache)
	// uses the answer stored by the first search: one encode.
	// high's target is the image's own q80 JPEG's score, stored with the
	// answer.
	first := e.get(e.tokenURL("/users/alice/images/"+id+".jpg?t[]=resize:width=300&quality=auto", userPriv)).Header.Get("X-Service-Quality")
	q, _, _ := strings.Cut(first, ";")
	m := header.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("width 300: X-Service-Quality %q", first)
	}
	r := e.get(e.tokenURL("/users/alice/images/"+id+".jpg?t[]=resize:width=290&quality=auto", userPriv))
	if got, want := r.Header.Get("X-Service-Quality"), regexp.MustCompile(`^`+q+`; stored; target=high\(jpg80\+[\d.]+=`+regexp.QuoteMeta(m[2])+`\)$`); r.StatusCode != 200 || !want.MatchString(got) {
		t.Errorf("width 290 after 300: %d, X-Service-Quality %q, want %q", r.StatusCode, got, want)
	}
	// An explicit level wins over quality=auto.
	r = e.get(e.tokenURL("/users/alice/images/"+id+".jpg?t[]=compress:level=50&quality=auto", userPriv))
	if r.StatusCode != 200 || r.Header.Get("X-Service-Quality") != "" {
		t.Errorf("compress:level=50 with quality=auto: %d, X-Service-Quality %q", r.StatusCode, r.Header.Get("X-Service-Quality"))
	}
	r = e.get(e.tokenURL("/users/alice/images/"+id+".jpg?quality=best", userPriv))
	if msg := r.errMessage(t); r.StatusCode != 400 || msg != `Invalid value for quality: "best" (auto, low, medium, high, lossless-like)` {
		t.Errorf("quality=best: %d %q", r.StatusCode, msg)
	}
}
