package web_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/engine/videotest"
	"github.com/vitrine/vitrine/web"
)

// TestImagePageVideo: a video's page plays it, its poster shown first, and
// lists its duration, frame rate and codec; both URLs answer.
func TestImagePageVideo(t *testing.T) {
	videotest.Need(t)
	eng, err := engine.New(engine.Config{Uploads: engine.Uploads{VideoUploads: engine.VideoUploads{Video: true}}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvDeps(t, web.Config{}, nil, func(d *api.Deps) { d.Engine = eng })
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := videotest.H264(t, t.TempDir())
	b.uploadForm("alice", data)
	p := b.do(http.MethodGet, "/admin/users/alice/images/"+md5Hex(data), nil, nil)
	m := regexp.MustCompile(`<video src="([^"]+)" poster="([^"]+)" controls`).FindStringSubmatch(p.body)
	if p.status != 200 || m == nil || !strings.Contains(p.body, "<dt>Codec</dt><dd class=\"mono\">h264</dd>") ||
		!strings.Contains(p.body, "<dt>Frame rate</dt><dd class=\"mono\">25 fps</dd>") {
		t.Fatalf("video page %d:\n%s", p.status, p.body)
	}
	if !strings.Contains(p.header.Get("Content-Security-Policy"), "media-src 'self'") {
		t.Fatalf("CSP %q lets no video play", p.header.Get("Content-Security-Policy"))
	}
	for i, want := range []string{"video/mp4", "image/webp"} {
		u := html.UnescapeString(m[i+1])
		r := b.do(http.MethodGet, strings.TrimPrefix(u, e.url), nil, nil)
		if r.status != 200 || r.header.Get("Content-Type") != want {
			t.Fatalf("GET %s: %d %s", u, r.status, r.header.Get("Content-Type"))
		}
	}
}
