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
