package web_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// TestSearchAndBulk searches across users by user, checksum and metadata,
// and runs every bulk action on ticked images without JavaScript: set and
// remove a metadata key, download a zip, delete after a confirmation with
// a count; each action ends on the grid (post, redirect, get).
func TestSearchAndBulk(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	imgs := map[string][]byte{}
	for i, user := range []string{"alice", "alice", "bob"} {
		data := pngBytes(t, byte(10+i))
		b.uploadForm(user, data)
		imgs[user+"/"+md5Hex(data)] = data
	}
	sels := slices.Sorted(func(yield func(string) bool) {
		for k := range imgs {
			if !yield(k) {
				return
			}
		}
	})
	search := func(q url.Values) page {
		t.Helper()
		p := b.do(http.MethodGet, "/admin/search?"+q.Encode(), nil, nil)
		if p.status != 200 {
			t.Fatalf("search %v: %d", q, p.status)
		}
		return p
	}
	ticked := func(p page) int { return strings.Count(p.body, `name="sel"`) }
	if p := search(nil); ticked(p) != 3 || !strings.Contains(p.body, "3 images") {
		t.Fatalf("search everything: %d tiles", ticked(p))
	}
	if p := search(url.Values{"users": {"bob"}}); ticked(p) != 1 || !strings.Contains(p.body, `value="`+sels[2]+`"`) {
		t.Fatalf("search bob: %d tiles", ticked(p))
	}
	sum := strings.Split(sels[0], "/")[1]
	if p := search(url.Values{"checksums": {sum}}); ticked(p) != 1 {
		t.Fatalf("search by checksum: %d tiles", ticked(p))
	}
	bulk := func(action string, extra url.Values, sel ...string) page {
		t.Helper()
		f := url.Values{"csrf": {b.token("/admin/search")}, "action": {action}, "sel": sel, "back": {"/admin/search?users=alice+bob"}}
		for k, v := range extra {
			f[k] = v
		}
		return b.do(http.MethodPost, "/admin/bulk", f, nil)
	}
	t.Run("metadata", func(t *testing.T) {
		p := bulk("md-set", url.Values{"mdkey": {"tag"}, "mdvalue": {"42"}}, sels[0], sels[2])
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != "/admin/search?users=alice+bob" {
			t.Fatalf("set: %d %s", p.status, loc)
		}
		if p := b.follow(p); !strings.Contains(p.body, "Set tag on 2 images.") {
			t.Fatalf("no notice after setting")
		}
		if p := search(url.Values{"metadata": {"tag=42"}}); ticked(p) != 2 {
			t.Fatalf("search by the set metadata: %d tiles", ticked(p))
		}
		p = b.follow(bulk("md-remove", url.Values{"mdkey": {"tag"}}, sels[0]))
		if !strings.Contains(p.body, "Removed tag from 1 image.") {
			t.Fatalf("no notice after removing")
		}
		md, err := e.db.Metadata(context.Background(), "alice", strings.Split(sels[0], "/")[1])
		if err != nil || len(md) != 0 {
			t.Fatalf("metadata after remove: %v %v", md, err)
		}
	})
	t.Run("zip", func(t *testing.T) {
		p := bulk("zip", nil, sels...)
		if p.status != 200 || p.header.Get("Content-Type") != "application/zip" ||
			!strings.HasPrefix(p.header.Get("Content-Disposition"), "attachment;") {
			t.Fatalf("zip: %d %v", p.status, p.header)
		}
		zr, err := zip.NewReader(strings.NewReader(p.body), int64(len(p.body)))
		if err != nil {
			t.Fatal(err)
		}
		if len(zr.File) != 3 {
			t.Fatalf("zip holds %d files", len(zr.File))
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if want := imgs[strings.TrimSuffix(f.Name, ".png")]; !bytes.Equal(got, want) {
				t.Fatalf("zip entry %s: %d bytes, not the original", f.Name, len(got))
			}
		}
	})
	t.Run("delete", func(t *testing.T) {
		p := bulk("delete", nil, sels[0], sels[1])
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/admin/bulk/delete?") {
			t.Fatalf("delete: %d %s", p.status, p.header.Get("Location"))
		}
		confirm := b.follow(p)
		if !strings.Contains(confirm.body, "Delete 2 images") || strings.Count(confirm.body, `name="sel"`) != 2 {
			t.Fatalf("confirmation:\n%s", confirm.body)
		}
		if _, err := e.db.Image(context.Background(), "alice", strings.Split(sels[0], "/")[1]); err != nil {
			t.Fatalf("deleted before the confirmation: %v", err)
		}
		p = b.do(http.MethodPost, "/admin/bulk/delete", url.Values{"csrf": {b.token("/admin/search")}, "sel": {sels[0], sels[1]},
			"back": {"/admin/search"}}, nil)
		if p := b.follow(p); !strings.Contains(p.body, "Deleted 2 images.") || ticked(p) != 1 {
			t.Fatalf("after delete: %d tiles left", ticked(p))
		}
		for _, s := range sels[:2] {
			if _, err := e.db.Image(context.Background(), "alice", strings.Split(s, "/")[1]); !errors.Is(err, storage.ErrNotExist) {
				t.Fatalf("%s after delete: %v", s, err)
			}
		}
	})
	t.Run("refusals", func(t *testing.T) {
		if p := bulk("zip", nil); p.status != http.StatusBadRequest || !strings.Contains(p.body, "No image is ticked") {
			t.Fatalf("nothing ticked: %d", p.status)
		}
		if p := bulk("zip", nil, "../etc"); p.status != http.StatusBadRequest {
			t.Fatalf("bad selection: %d", p.status)
		}
		p := bulk("delete", nil, sels[2])
		p.header.Set("Location", strings.Replace(p.header.Get("Location"), "back=", "back=https%3A%2F%2Fevil.example%2F&x=", 1))
		if c := b.follow(p); strings.Contains(c.body, "evil.example") {
			t.Fatalf("the confirmation leads to another site")
		}
	})
}

// TestBulkReadOnly: a read-only key may tick and download, but is offered
// neither delete nor metadata, and a crafted post changes nothing.
func TestBulkReadOnly(t *testing.T) {
	e := newEnv(t, web.Config{})
	admin := e.browser(t)
	admin.signIn("admin", adminPriv)
	data := pngBytes(t, 21)
	admin.uploadForm("alice", data)
	if p := admin.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {admin.token("/admin/keys")}, "publicKey": {"viewer"},
		"privateKey": {"viewer-private"}, "group": {"read-only"}, "users": {"alice"}}, nil); p.status >= 400 {
		t.Fatalf("create viewer: %d", p.status)
	}
	b := e.browser(t)
	b.signIn("viewer", "viewer-private")
	p := b.do(http.MethodGet, "/admin/users/alice", nil, nil)
	if !strings.Contains(p.body, `value="zip"`) || strings.Contains(p.body, `value="delete"`) || strings.Contains(p.body, `value="md-set"`) {
		t.Fatalf("bulk actions offered to a read-only key:\n%s", p.body)
	}
	sel := "alice/" + md5Hex(data)
	// A zip of an image the key may read and one it may not: the first is
	// in it, the second named in MISSING.txt.
	bobs := pngBytes(t, 22)
	admin.uploadForm("bob", bobs)
	p = b.do(http.MethodPost, "/admin/bulk", url.Values{"csrf": {b.token("/admin/users/alice")}, "action": {"zip"},
		"sel": {sel, "bob/" + md5Hex(bobs)}}, nil)
	zr, err := zip.NewReader(strings.NewReader(p.body), int64(len(p.body)))
	if p.status != 200 || err != nil || len(zr.File) != 2 || zr.File[0].Name != sel+".png" || zr.File[1].Name != "MISSING.txt" {
		t.Fatalf("zip with a forbidden image: %d %v", p.status, err)
	}
	rc, _ := zr.File[1].Open()
	missing, _ := io.ReadAll(rc)
	if !strings.Contains(string(missing), "bob/"+md5Hex(bobs)) {
		t.Fatalf("MISSING.txt: %s", missing)
	}
	p = b.do(http.MethodPost, "/admin/bulk/delete", url.Values{"csrf": {b.token("/admin/users/alice")}, "sel": {sel},
		"back": {"/admin/users/alice"}}, nil)
	if p = b.follow(p); !strings.Contains(p.body, "Deleted 0 images. 1 image was left unchanged") {
		t.Fatalf("crafted delete:\n%s", p.body)
	}
	if _, err := e.db.Image(context.Background(), "alice", md5Hex(data)); err != nil {
		t.Fatalf("a read-only key deleted an image: %v", err)
	}
}

// TestBulkRemoveKeepsConcurrentChange: removing a metadata key in bulk
// reads each image's metadata and writes it back without the key; a change
// another client makes between that read and write is kept (the write is
// conditional, refused and done again on the changed document).
func TestBulkRemoveKeepsConcurrentChange(t *testing.T) {
	var interleaved int
	e := newEnvWith(t, web.Config{}, func(db *storage.DB, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/metadata") && interleaved == 0 {
				interleaved++
				parts := strings.Split(r.URL.Path, "/") // /users/<user>/images/<id>/metadata
				if _, err := db.MergeMetadata(r.Context(), parts[2], parts[4], map[string]any{"other": "concurrent"}); err != nil {
					t.Errorf("concurrent change: %v", err)
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 77)
	b.uploadForm("alice", data)
	id := md5Hex(data)
	ctx := context.Background()
	if err := e.db.SetMetadata(ctx, "alice", id, map[string]any{"tag": 1, "keep": true}); err != nil {
		t.Fatal(err)
	}
	f := url.Values{"csrf": {b.token("/admin/search")}, "action": {"md-remove"}, "mdkey": {"tag"},
		"sel": {"alice/" + id}, "back": {"/admin/search"}}
	p := b.follow(b.do(http.MethodPost, "/admin/bulk", f, nil))
	if !strings.Contains(p.body, "Removed tag from 1 image.") {
		t.Fatalf("no notice after removing:\n%s", p.body)
	}
	md, err := e.db.Metadata(ctx, "alice", id)
	if err != nil {
		t.Fatal(err)
	}
	if interleaved != 1 || md["other"] != "concurrent" || md["keep"] != true || md["tag"] != nil {
		t.Fatalf("after a change between read and write (%d): metadata %v, want other and keep without tag", interleaved, md)
	}
}
