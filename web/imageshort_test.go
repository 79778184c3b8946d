package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/web"
)

// TestShortURLList: the image page lists every short URL of the image with
// its transformations and a delete button that needs no typed id; deleting
// one comes back to the list without it.
func TestShortURLList(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 4)
	b.uploadForm("alice", data)
	image := "/admin/users/alice/images/" + md5Hex(data)
	if p := b.do(http.MethodGet, image, nil, nil); !strings.Contains(p.body, `id="su-none"`) {
		t.Fatalf("no short URLs: the page does not say so")
	}
	for _, q := range []string{"t[]=desaturate", "t[]=thumbnail:width=20,height=20"} {
		p := b.do(http.MethodPost, image+"/shorturls", url.Values{"csrf": {b.token(image)}, "query": {q}, "extension": {"png"}}, nil)
		if p.status != http.StatusSeeOther {
			t.Fatalf("create %s: %d", q, p.status)
		}
	}
	p := b.do(http.MethodGet, image, nil, nil)
	list, _, _ := strings.Cut(p.body[strings.Index(p.body, `id="su-list"`)+1:], "</ul>")
	ids := regexp.MustCompile(`name="id" value="([A-Za-z0-9]{7})"`).FindAllStringSubmatch(list, -1)
	if len(ids) != 2 || !strings.Contains(list, "desaturate") || !strings.Contains(list, "thumbnail:width=20,height=20") {
		t.Fatalf("short URL list (%d delete buttons):\n%s", len(ids), list)
	}
	gone := ids[0][1]
	p = b.do(http.MethodPost, image+"/shorturls/delete", url.Values{"csrf": {b.token(image)}, "id": {gone}}, nil)
	p = b.follow(p)
	if !strings.Contains(p.body, "Short URL "+gone+" deleted.") || strings.Contains(p.body, `value="`+gone+`"`) ||
		!strings.Contains(p.body, `value="`+ids[1][1]+`"`) {
		t.Fatalf("after deleting %s:\n%s", gone, p.body)
	}
}

// TestImageVariants: the image page lists the image's cached variants once
// a transformed version was served, with the chain and format that made
// it, size and last use.
func TestImageVariants(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 6)
	b.uploadForm("alice", data)
	image := "/admin/users/alice/images/" + md5Hex(data)
	if p := b.do(http.MethodGet, image, nil, nil); !strings.Contains(p.body, `id="no-variants"`) {
		t.Fatalf("an image without variants: the page does not say so")
	}
	// The page's own preview is a transformed variant; fetch it as the
	// browser would.
	p := b.do(http.MethodGet, image, nil, nil)
	src := regexp.MustCompile(`<figure class="preview card"><img src="([^"]+)"`).FindStringSubmatch(p.body)
	if src == nil {
		t.Fatalf("no preview on the image page")
	}
	r, err := http.Get(strings.ReplaceAll(src[1], "&amp;", "&"))
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("preview: %v %v", r, err)
	}
	r.Body.Close()
	p = b.do(http.MethodGet, image, nil, nil)
	table, _, _ := strings.Cut(p.body[strings.Index(p.body, `id="variants"`)+1:], "</table>")
	if strings.Count(table, "<tr>") != 2 || !strings.Contains(table, " B<") && !strings.Contains(table, "KiB<") {
		t.Fatalf("variants table:\n%s", table)
	}
	// The variant names the chain and format that made it, not its hash.
	if !strings.Contains(table, "<code>maxSize:height=960,width=960</code>") || !strings.Contains(table, ">webp<") {
		t.Fatalf("variants table without the chain and format:\n%s", table)
	}
}

// TestImageFrames: the image page says how many frames the image has.
func TestImageFrames(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 7)
	b.uploadForm("alice", data)
	p := b.do(http.MethodGet, "/admin/users/alice/images/"+md5Hex(data), nil, nil)
	if !regexp.MustCompile(`<dt>Frames</dt><dd[^>]*>1 \(still image\)</dd>`).MatchString(p.body) {
		t.Fatalf("no frame count on the image page")
	}
}
