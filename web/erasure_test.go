package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// TestEraseUserPages: the user's page offers "Erase user" to a key with
// user.delete; the confirmation counts the images and refuses a post
// whose typed name is not the user's (nothing is erased); the right name
// erases and leads to the erasure's page, which reloads itself while the
// erasure runs and, once it is done, shows the counts and offers the
// receipt, the API's bytes.
func TestEraseUserPages(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	b.uploadForm("alice", pngBytes(t, 1), pngBytes(t, 2))

	if p := b.do(http.MethodGet, "/admin/users/alice", nil, nil); !strings.Contains(p.body, `href="/admin/users/alice/erase"`) {
		t.Fatalf("user page: %d, no erase action\n%s", p.status, p.body)
	}
	p := b.do(http.MethodGet, "/admin/users/alice/erase", nil, nil)
	if p.status != 200 || !strings.Contains(p.body, "2 images") || !strings.Contains(p.body, `name="confirm"`) {
		t.Fatalf("confirmation: %d\n%s", p.status, p.body)
	}
	token := b.token("/admin/users/alice/erase")
	p = b.do(http.MethodPost, "/admin/users/alice/erase", url.Values{"csrf": {token}, "confirm": {"alicia"}}, nil)
	if p.status != 400 || !strings.Contains(p.body, "Type the user name, alice, to confirm.") {
		t.Fatalf("wrong name: %d\n%s", p.status, p.body)
	}
	if busy, err := e.db.Erasing(context.Background(), "alice"); err != nil || busy {
		t.Fatalf("a wrong name started an erasure (%v, %v)", busy, err)
	}
	p = b.do(http.MethodPost, "/admin/users/alice/erase", url.Values{"csrf": {token}, "confirm": {"alice"}}, nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/admin/users/alice/erasure" {
		t.Fatalf("erase: %d %v", p.status, p.header)
	}
	p = b.follow(p)
	if p.status != 200 || p.header.Get("Refresh") != "2" || !strings.Contains(p.body, "Waiting for an instance to take it.") {
		t.Fatalf("erasure page while pending: %d %v\n%s", p.status, p.header, p.body)
	}
	if p := b.do(http.MethodGet, "/admin/users/alice", nil, nil); !strings.Contains(p.body, "alice is being erased.") ||
		strings.Contains(p.body, `href="/admin/users/alice/erase"`) {
		t.Fatalf("user page while erasing: %d\n%s", p.status, p.body)
	}

	pass := storage.ErasurePass{Batch: 1, Lease: time.Hour, Wait: time.Millisecond, RetryMin: time.Hour, RetryMax: time.Hour}
	coll, err := storage.NewCollector(e.db, e.blobs, storage.CollectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		s, ok, err := e.db.EraseStep(context.Background(), e.blobs, pass)
		if err != nil || i == 50 {
			t.Fatalf("step %d: %+v, %v", i, s, err)
		}
		if s.Done {
			break
		}
		if _, err := coll.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !ok || s.Waiting {
			time.Sleep(2 * pass.Wait) // due again after pass.Wait
		}
	}
	p = b.do(http.MethodGet, "/admin/users/alice/erasure", nil, nil)
	if p.status != 200 || p.header.Get("Refresh") != "" || !strings.Contains(p.body, "Done: nothing of alice is left.") ||
		!strings.Contains(p.body, `href="/admin/users/alice/erasure/receipt"`) {
		t.Fatalf("erasure page when done: %d %v\n%s", p.status, p.header, p.body)
	}
	done, err := e.db.LatestErasure(context.Background(), "alice", true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.body, done.ReceiptSHA256) {
		t.Fatalf("the page does not show the receipt's hash %s\n%s", done.ReceiptSHA256, p.body)
	}
	r := b.do(http.MethodGet, "/admin/users/alice/erasure/receipt", nil, nil)
	sum := sha256.Sum256([]byte(r.body))
	if r.status != 200 || hex.EncodeToString(sum[:]) != done.ReceiptSHA256 ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), `attachment; filename="erasure-alice-`) {
		t.Fatalf("receipt: %d %v %s", r.status, r.header, r.body)
	}
	if p := b.do(http.MethodGet, "/admin/users/bob/erasure", nil, nil); p.status != 404 || !strings.Contains(p.body, "User bob was never erased.") {
		t.Fatalf("erasure page of a user never erased: %d\n%s", p.status, p.body)
	}
}
