package api_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// acceptAll lists every auto-quality format, as a browser that takes them
// all would.
const acceptAll = "image/avif,image/jxl,image/webp,image/jpeg,*/*;q=0.8"

// TestBestFormat checks the best format per image: with an Accept that
// lists several auto-quality formats and quality=auto, the answer is the
// smallest of them that meets the target, as each encoded at its own auto
// quality shows; a second request at another size of the class is decided
// from the stored answers; an Accept with jpeg only gives jpeg; and the
// variant cache keeps answers for different candidate sets apart.
func TestBestFormat(t *testing.T) {
	e := newEnv(t, testConfig())
	exts := map[string]string{"image/avif": "avif", "image/webp": "webp", "image/jpeg": "jpg", "image/jxl": "jxl"}
	scoreRe := regexp.MustCompile(`([\d.]+)\); score=([\d.]+)`)

	// Each candidate at its own auto quality, searched and stored.
	id := e.upload(jpegImage(t, 599, 417))
	type cand struct {
		bytes         int
		target, score float64
	}
	cands := map[string]cand{}
	for _, ext := range []string{"avif", "jxl", "webp", "jpg"} {
		r := e.get(e.tokenURL("/users/alice/images/"+id+"."+ext+"?t[]=resize:width=300&quality=auto", userPriv))
		if r.StatusCode == 404 && ext == "jxl" {
			continue // this libvips has no JPEG XL encoder
		}
		m := scoreRe.FindStringSubmatch(r.Header.Get("X-Service-Quality"))
		if r.StatusCode != 200 || m == nil {
			t.Fatalf("%s: %d, X-Service-Quality %q", ext, r.StatusCode, r.Header.Get("X-Service-Quality"))
		}
		target, _ := strconv.ParseFloat(m[1], 64)
		score, _ := strconv.ParseFloat(m[2], 64)
		cands[ext] = cand{len(r.body), target, score}
	}
	want, wantBytes := "", 0
	for ext, c := range cands {
		if c.score >= c.target && (want == "" || c.bytes < wantBytes) {
			want, wantBytes = ext, c.bytes
		}
	}
	if want == "" {
		t.Fatalf("no candidate met the target: %v", cands)
	}
	path := "/users/alice/images/" + id + "?t[]=resize:width=300&quality=auto"
	r := e.get(e.tokenURL(path, userPriv), "Accept", acceptAll)
	got := exts[r.Header.Get("Content-Type")]
	if r.StatusCode != 200 || got != want || len(r.body) != wantBytes || !strings.Contains(r.Header.Get("Vary"), "Accept") {
		t.Fatalf("Accept all: %d %s (%d bytes), Vary %q; want %s (%d bytes) of %v", r.StatusCode, got, len(r.body), r.Header.Get("Vary"), want, wantBytes, cands)
	}
	if f := r.Header.Get("X-Service-Format"); !strings.HasPrefix(f, want+"; stored; candidates=") {
		t.Errorf("decided from stored answers: X-Service-Format %q", f)
	}

	// A fresh image: the first request searches every candidate, the
	// second (another width, same size class, not cached) looks it up.
	id2 := e.upload(jpegImage(t, 601, 419))
	r = e.get(e.tokenURL("/users/alice/images/"+id2+"?t[]=resize:width=300&quality=auto", userPriv), "Accept", acceptAll)
	first := exts[r.Header.Get("Content-Type")]
	if f := r.Header.Get("X-Service-Format"); r.StatusCode != 200 || first == "" || !strings.HasPrefix(f, first+"; searched; ") {
		t.Fatalf("first request: %d %q, X-Service-Format %q", r.StatusCode, r.Header.Get("Content-Type"), f)
	}
	for _, part := range strings.Split(strings.TrimPrefix(r.Header.Get("X-Service-Format"), first+"; searched; "), ",") {
		ext, n, _ := strings.Cut(part, "=")
		if ext == first && n != strconv.Itoa(len(r.body)) {
			t.Errorf("first request: %s is %d bytes, header says %s", ext, len(r.body), n)
		}
	}
	r = e.get(e.tokenURL("/users/alice/images/"+id2+"?t[]=resize:width=290&quality=auto", userPriv), "Accept", acceptAll)
	if f := r.Header.Get("X-Service-Format"); r.StatusCode != 200 || exts[r.Header.Get("Content-Type")] != first || !strings.HasPrefix(f, first+"; stored; ") {
		t.Errorf("second request: %d %q, X-Service-Format %q, want %s from the stored decision", r.StatusCode, r.Header.Get("Content-Type"), f, first)
	}

	// jpeg only: jpeg, no choice made.
	r = e.get(e.tokenURL(path, userPriv), "Accept", "image/jpeg")
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/jpeg" || r.Header.Get("X-Service-Format") != "" {
		t.Errorf("Accept image/jpeg: %d %q, X-Service-Format %q", r.StatusCode, r.Header.Get("Content-Type"), r.Header.Get("X-Service-Format"))
	}
	// Another candidate set is another variant: without the winner in
	// the Accept, the answer is another format.
	var rest []string
	for mime, ext := range exts {
		if ext != want && ext != "jpg" {
			rest = append(rest, mime)
		}
	}
	r = e.get(e.tokenURL(path, userPriv), "Accept", strings.Join(append(rest, "image/jpeg"), ","))
	if got := exts[r.Header.Get("Content-Type")]; want != "jpg" && (r.StatusCode != 200 || got == want || got == "") {
		t.Errorf("Accept without %s: %d %q", want, r.StatusCode, r.Header.Get("Content-Type"))
	}
	// Without quality=auto the preference order stands.
	r = e.get(e.tokenURL("/users/alice/images/"+id+"?t[]=resize:width=300", userPriv), "Accept", acceptAll)
	if r.StatusCode != 200 || r.Header.Get("X-Service-Format") != "" {
		t.Errorf("without quality=auto: %d, X-Service-Format %q", r.StatusCode, r.Header.Get("X-Service-Format"))
	}
}
