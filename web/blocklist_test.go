package web_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// TestBlocklist walks the blocklist pages without JavaScript: the
// navigation entry, blocking an image from its page (its checksum and its
// hash), the entry's page with the image it matches, an upload the entry
// refuses, the refusals shown on the form, the removal of the matches and
// the deletion of an entry, each after a confirmation page, and a key
// without the blocklist's resources offered none of it.
func TestBlocklist(t *testing.T) {
	e := newEnv(t, web.Config{})
	ctx := context.Background()
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 11)
	b.uploadForm("alice", data)
	id := md5Hex(data)

	img := b.do(http.MethodGet, "/admin/users/alice/images/"+id, nil, nil)
	link := `href="/admin/blocklist?image=` + id + `&amp;user=alice#add-image"`
	if !strings.Contains(img.body, link) || !strings.Contains(img.body, `<a href="/admin/blocklist">Blocklist</a>`) {
		t.Fatalf("the image page lacks %s or the navigation entry:\n%s", link, img.body)
	}
	list := b.do(http.MethodGet, "/admin/blocklist?image="+id+"&user=alice", nil, nil)
	for _, want := range []string{`id="no-entries"`, `id="bl-image-user" name="user" value="alice"`, `value="` + id + `"`,
		`id="bl-phash-phash"`, `id="bl-checksum-checksum"`} {
		if list.status != 200 || !strings.Contains(list.body, want) {
			t.Fatalf("blocklist page (%d) lacks %q:\n%s", list.status, want, list.body)
		}
	}
	csrf := b.token("/admin/blocklist")
	add := func(form url.Values) page {
		form.Set("csrf", csrf)
		return b.do(http.MethodPost, "/admin/blocklist", form, nil)
	}
	p := add(url.Values{"kind": {"image"}, "user": {"alice"}, "image": {id}, "distance": {"4"}, "reason": {"notice 7"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/admin/blocklist/2?added=1%2C2" &&
		p.header.Get("Location") != "/admin/blocklist/2?added=1,2" {
		t.Fatalf("blocking the image: %d to %q", p.status, p.header.Get("Location"))
	}
	entry := b.follow(p)
	for _, want := range []string{"Added: blocklist entries 1 and 2.", "Perceptual hash", "within 4 bits", "notice 7",
		`href="/admin/users/alice/images/` + id + `"`, "same hash (0 bits apart)", `href="/admin/blocklist/2/remove"`,
		`href="/admin/blocklist/2/delete"`} {
		if !strings.Contains(html.UnescapeString(entry.body), want) {
			t.Fatalf("entry page lacks %q:\n%s", want, entry.body)
		}
	}
	list = b.do(http.MethodGet, "/admin/blocklist", nil, nil)
	if !strings.Contains(list.body, "2 entries") || !strings.Contains(list.body, id) || !strings.Contains(list.body, `href="/admin/blocklist/1"`) {
		t.Fatalf("the list lacks the entries:\n%s", list.body)
	}

	t.Run("UploadRefused", func(t *testing.T) {
		p := b.uploadForm("bob", data)
		if p.status != http.StatusBadRequest || !strings.Contains(html.UnescapeString(p.body), "This image is blocked (blocklist entry 1)") {
			t.Fatalf("the upload page (%d) does not say why:\n%s", p.status, p.body)
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		for _, c := range []struct {
			form  url.Values
			kind  string
			words string
		}{
			{url.Values{"kind": {"phash"}, "phash": {"xyz"}}, "phash", "16 hex digits"},
			{url.Values{"kind": {"phash"}, "phash": {"0123456789abcdef"}, "distance": {"65"}}, "phash", "from 0 to 64"},
			{url.Values{"kind": {"checksum"}, "checksum": {id}}, "checksum", "Blocklist entry 1 already blocks this checksum"},
			{url.Values{"kind": {"image"}, "user": {"alice"}, "image": {"nope"}}, "image", "There is no image nope of alice."},
			{url.Values{"kind": {"image"}, "user": {"alice"}, "image": {id}}, "image", "already blocks"},
		} {
			p := add(c.form)
			if p.status != http.StatusBadRequest && p.status != http.StatusNotFound ||
				!strings.Contains(p.body, `id="bl-`+c.kind+`-error"`) || !strings.Contains(html.UnescapeString(p.body), c.words) {
				t.Errorf("%v: %d, want the refusal %q on the %s form:\n%s", c.form, p.status, c.words, c.kind, p.body)
			}
		}
	})
	t.Run("Remove", func(t *testing.T) {
		confirm := b.do(http.MethodGet, "/admin/blocklist/2/remove", nil, nil)
		if !strings.Contains(confirm.body, "The 1 stored image of every user that this entry matches will be deleted") ||
			!strings.Contains(confirm.body, `action="/admin/blocklist/2/remove"`) {
			t.Fatalf("confirmation page:\n%s", confirm.body)
		}
		if _, err := e.db.Image(ctx, "alice", id); err != nil {
			t.Fatalf("the confirmation page deleted: %v", err)
		}
		csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`).FindStringSubmatch(confirm.body)[1]
		p := b.follow(b.do(http.MethodPost, "/admin/blocklist/2/remove", url.Values{"csrf": {csrf}}, nil))
		if !strings.Contains(p.body, "Deleted 1 matching image.") || !strings.Contains(p.body, `id="no-matches"`) {
			t.Fatalf("after the removal:\n%s", p.body)
		}
		if _, err := e.db.Image(ctx, "alice", id); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("the image is still stored: %v", err)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		confirm := b.do(http.MethodGet, "/admin/blocklist/1/delete", nil, nil)
		if !strings.Contains(confirm.body, "Uploads of the checksum "+id) {
			t.Fatalf("confirmation page:\n%s", confirm.body)
		}
		csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`).FindStringSubmatch(confirm.body)[1]
		p := b.follow(b.do(http.MethodPost, "/admin/blocklist/1/delete", url.Values{"csrf": {csrf}}, nil))
		if !strings.Contains(p.body, "Blocklist entry 1 was deleted") || strings.Contains(p.body, `href="/admin/blocklist/1"`) {
			t.Fatalf("after the deletion:\n%s", p.body)
		}
		if p := b.do(http.MethodGet, "/admin/blocklist/1", nil, nil); p.status != http.StatusNotFound {
			t.Fatalf("deleted entry's page: %d", p.status)
		}
	})
	t.Run("ReadOnlyKey", func(t *testing.T) {
		if p := b.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {b.token("/admin/keys")}, "publicKey": {"viewer"},
			"privateKey": {"viewer-private"}, "group": {"read-only"}, "users": {"*"}}, nil); p.status >= 400 {
			t.Fatalf("create viewer: %d", p.status)
		}
		v := e.browser(t)
		v.signIn("viewer", "viewer-private")
		home := v.do(http.MethodGet, "/admin/", nil, nil)
		if strings.Contains(home.body, `href="/admin/blocklist"`) {
			t.Errorf("the navigation offers the blocklist to a read-only key")
		}
		if p := v.do(http.MethodGet, "/admin/blocklist", nil, nil); p.status != http.StatusForbidden || strings.Contains(p.body, `id="add-image"`) {
			t.Errorf("blocklist page of a read-only key: %d", p.status)
		}
	})
}
