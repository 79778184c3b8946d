package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

// countingWaker counts its wake-ups.
type countingWaker struct{ n atomic.Int64 }

func (w *countingWaker) Wake() { w.n.Add(1) }

// eraseNow runs the erasure steps (as the server's worker would, with
// nothing to wait for) and the blob queue until the erasure is done.
func (e *env) eraseNow() {
	e.t.Helper()
	p := storage.ErasurePass{Batch: 2, Lease: time.Hour, Wait: time.Millisecond, RetryMin: time.Hour, RetryMax: time.Hour}
	for range 50 {
		s, ok, err := e.db.EraseStep(e.t.Context(), e.blobs, p)
		if err != nil {
			e.t.Fatal(err)
		}
		if s.Done {
			return
		}
		e.drain()
		if !ok || s.Waiting {
			time.Sleep(2 * p.Wait)
		}
	}
	e.t.Fatal("the erasure did not finish within 50 steps")
}

// TestEraseUser: DELETE /users/<user> needs user.delete (group all); it
// answers 202 with the erasure and its status resource in Location, the
// same erasure while it runs (waking the worker each time), and refuses
// the user's uploads with 409 meanwhile; the status resource follows it
// to done, with the receipt's hash, and the receipt downloads with that
// hash and every image; then a DELETE answers 200 with the finished
// erasure, the user may upload again, and a user never erased has
// nothing to erase.
func TestEraseUser(t *testing.T) {
	w := &countingWaker{}
	e := newEnvWith(t, testConfig(), func(d *api.Deps) { d.Erasures = w })
	ids := []string{e.upload(pngImage(t, 8, 8, 1)), e.upload(pngImage(t, 8, 8, 2)), e.upload(pngImage(t, 8, 8, 3))}
	if r := e.signed(http.MethodPut, "/users/alice/images/"+ids[0]+"/metadata", userKey, userPriv, []byte(`{"a": 1}`)); r.StatusCode != 200 {
		t.Fatalf("metadata: %d %s", r.StatusCode, r.body)
	}

	if r := e.signed(http.MethodDelete, "/users/alice", userKey, userPriv, nil); r.StatusCode != 400 || !strings.HasPrefix(r.errMessage(t), "Permission denied (public key): the access rules of key ") {
		t.Fatalf("DELETE by a read-write key: %d %s", r.StatusCode, r.body)
	}
	r := e.signed(http.MethodDelete, "/users/alice", adminKey, adminPriv, nil)
	if r.StatusCode != http.StatusAccepted || r.Header.Get("Location") != "/users/alice/erasure" {
		t.Fatalf("DELETE: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	var first api.Erasure
	if err := json.Unmarshal(r.body, &first); err != nil || first.State != "pending" || first.RequestedBy != adminKey ||
		first.User != "alice" || first.Receipt != nil || first.Finished != nil {
		t.Fatalf("DELETE answered %s (%v)", r.body, err)
	}
	r = e.signed(http.MethodDelete, "/users/alice", adminKey, adminPriv, nil)
	var again api.Erasure
	if err := json.Unmarshal(r.body, &again); err != nil || r.StatusCode != http.StatusAccepted || again.ID != first.ID {
		t.Fatalf("second DELETE: %d %s", r.StatusCode, r.body)
	}
	if w.n.Load() != 2 {
		t.Fatalf("the erasure worker was woken %d times, want 2", w.n.Load())
	}
	r = e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 8, 8, 4))
	if r.StatusCode != http.StatusConflict || r.errMessage(t) != "User 'alice' is being erased; try again once the erasure is done" {
		t.Fatalf("upload while erasing: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(e.tokenURL("/users/alice/erasure/receipt?publicKey="+roKey, roPriv)); r.StatusCode != 404 {
		t.Fatalf("receipt before done: %d %s", r.StatusCode, r.body)
	}

	e.eraseNow()
	r = e.get(e.tokenURL("/users/alice/erasure?publicKey="+roKey, roPriv))
	var done api.Erasure
	if err := json.Unmarshal(r.body, &done); err != nil || r.StatusCode != 200 || done.ID != first.ID || done.State != "done" ||
		done.Counts["images"] != 3 || done.Counts["metadata"] != 1 || done.Finished == nil || done.ReceiptSHA256 == nil ||
		done.Receipt == nil || *done.Receipt != "/users/alice/erasure/receipt" {
		t.Fatalf("status when done: %d %s (%v)", r.StatusCode, r.body, err)
	}
	r = e.get(e.tokenURL("/users/alice/erasure/receipt?publicKey="+roKey, roPriv))
	sum := sha256.Sum256(r.body)
	if r.StatusCode != 200 || hex.EncodeToString(sum[:]) != *done.ReceiptSHA256 ||
		r.Header.Get("Content-Disposition") != fmt.Sprintf(`attachment; filename="erasure-alice-%d.json"`, done.ID) {
		t.Fatalf("receipt: %d %v %s; want the hash %s", r.StatusCode, r.Header, r.body, *done.ReceiptSHA256)
	}
	var receipt struct {
		Images []struct {
			ID string `json:"imageIdentifier"`
		} `json:"images"`
	}
	if err := json.Unmarshal(r.body, &receipt); err != nil || len(receipt.Images) != 3 {
		t.Fatalf("receipt %s: %v", r.body, err)
	}
	for _, id := range ids {
		if r := e.get(e.tokenURL("/users/alice/images/"+id, userPriv)); r.StatusCode != 404 {
			t.Errorf("image %s after the erasure: %d", id, r.StatusCode)
		}
	}

	r = e.signed(http.MethodDelete, "/users/alice", adminKey, adminPriv, nil)
	var after api.Erasure
	if err := json.Unmarshal(r.body, &after); err != nil || r.StatusCode != 200 || after.ID != done.ID || after.State != "done" ||
		r.Header.Get("Location") != "/users/alice/erasure" {
		t.Fatalf("DELETE with nothing left: %d %s", r.StatusCode, r.body)
	}
	if r := e.signed(http.MethodDelete, "/users/bob", adminKey, adminPriv, nil); r.StatusCode != 404 || r.errMessage(t) != "User 'bob' has nothing to erase" {
		t.Fatalf("DELETE of a user never seen: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(e.tokenURL("/users/bob/erasure?publicKey="+adminKey, adminPriv)); r.StatusCode != 404 {
		t.Fatalf("status of a user never erased: %d %s", r.StatusCode, r.body)
	}
	e.upload(pngImage(t, 8, 8, 5))

	r = e.get(e.tokenURL("/audit?action=user.erase&publicKey="+adminKey, adminPriv))
	var audit struct {
		Entries []api.AuditEntry `json:"entries"`
	}
	if err := json.Unmarshal(r.body, &audit); err != nil || len(audit.Entries) != 1 || audit.Entries[0].Actor != adminKey ||
		audit.Entries[0].Target != "alice" || audit.Entries[0].Detail["receiptSha256"] != *done.ReceiptSHA256 {
		t.Fatalf("audit: %s (%v)", r.body, err)
	}
}
