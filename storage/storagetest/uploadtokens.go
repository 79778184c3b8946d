package storagetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// uploadToken is a token record for user with uses uses, valid for an hour
// from now; its hash is that of "token-<id>".
func uploadToken(id, user string, uses int) storage.UploadToken {
	sum := sha256.Sum256([]byte("token-" + id))
	now := time.Now().UTC().Truncate(time.Microsecond)
	return storage.UploadToken{ID: id, Hash: hex.EncodeToString(sum[:]), User: user, PublicKey: "issuer",
		Uses: uses, UsesLeft: uses, MaxBytes: 1 << 20, MaxPixels: 4_000_000, Formats: []string{"jpg", "png"},
		Metadata: map[string]any{"album": "summer", "n": json.Number("2")}, Origin: "https://app.example",
		Created: now, Expires: now.Add(time.Hour)}
}

// testUploadTokens covers upload tokens: stored and read back by hash,
// ids and hashes unique, uses spent down to none, revocation (one user's
// only, once), expiry, the purge, and their audit entries and events.
func testUploadTokens(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	api := storage.WithActor(ctx(t), storage.Actor{Key: "issuer", Addr: "192.0.2.9"})
	tok := uploadToken("t1", "u", 2)
	if err := db.CreateUploadToken(api, tok); err != nil {
		t.Fatal(err)
	}
	got, err := db.UploadToken(ctx(t), tok.Hash)
	if err != nil || !reflect.DeepEqual(got, tok) {
		t.Fatalf("UploadToken = %+v, %v; want %+v", got, err, tok)
	}
	_, err = db.UploadToken(ctx(t), hashOf("nothing"))
	wantErr(t, "unknown hash", err, storage.ErrNotExist)

	sameID, sameHash := uploadToken("t1", "u", 1), uploadToken("t2", "u", 1)
	sameID.Hash, sameHash.Hash = hashOf("other"), tok.Hash
	wantErr(t, "same id", db.CreateUploadToken(api, sameID), storage.ErrExist)
	wantErr(t, "same hash", db.CreateUploadToken(api, sameHash), storage.ErrExist)
	for name, change := range map[string]func(*storage.UploadToken){
		"no uses":      func(t *storage.UploadToken) { t.Uses = 0 },
		"short hash":   func(t *storage.UploadToken) { t.Hash = "abc" },
		"no user":      func(t *storage.UploadToken) { t.User = "" },
		"long id":      func(t *storage.UploadToken) { t.ID = fmt.Sprintf("%040d", 1) },
		"born expired": func(t *storage.UploadToken) { t.Expires = t.Created },
		"no max bytes": func(t *storage.UploadToken) { t.MaxBytes = 0 },
	} {
		bad := uploadToken("bad", "u", 1)
		bad.Hash = hashOf(name)
		change(&bad)
		wantErr(t, name, db.CreateUploadToken(api, bad), storage.ErrInvalid)
	}

	for i := range 2 {
		if err := db.SpendUploadToken(ctx(t), "t1"); err != nil {
			t.Fatalf("spend %d: %v", i+1, err)
		}
	}
	wantErr(t, "spend past its uses", db.SpendUploadToken(ctx(t), "t1"), storage.ErrUploadTokenSpent)
	wantErr(t, "spend an unknown token", db.SpendUploadToken(ctx(t), "nope"), storage.ErrUploadTokenSpent)
	if got, _ := db.UploadToken(ctx(t), tok.Hash); got.UsesLeft != 0 || got.Uses != 2 {
		t.Fatalf("after two uses: %d of %d left, want 0 of 2", got.UsesLeft, got.Uses)
	}

	t3 := uploadToken("t3", "u", 5)
	if err := db.CreateUploadToken(api, t3); err != nil {
		t.Fatal(err)
	}
	_, err = db.RevokeUploadToken(api, "someone-else", "t3", time.Now())
	wantErr(t, "revoke another user's token", err, storage.ErrNotExist)
	_, err = db.RevokeUploadToken(api, "u", "missing", time.Now())
	wantErr(t, "revoke a missing token", err, storage.ErrNotExist)
	at := time.Now().UTC().Truncate(time.Microsecond)
	rev, err := db.RevokeUploadToken(api, "u", "t3", at)
	if err != nil || !rev.Revoked.Equal(at) || rev.UsesLeft != 5 {
		t.Fatalf("RevokeUploadToken = %+v, %v; want revoked at %v", rev, err, at)
	}
	again, err := db.RevokeUploadToken(api, "u", "t3", at.Add(time.Minute))
	if err != nil || !again.Revoked.Equal(at) {
		t.Fatalf("revoked again: %+v, %v; want the first revocation kept", again, err)
	}
	wantErr(t, "spend a revoked token", db.SpendUploadToken(ctx(t), "t3"), storage.ErrUploadTokenSpent)

	old := uploadToken("t4", "u", 1)
	old.Created, old.Expires = old.Created.Add(-2*time.Hour), old.Created.Add(-time.Hour)
	if err := db.CreateUploadToken(api, old); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "spend an expired token", db.SpendUploadToken(ctx(t), "t4"), storage.ErrUploadTokenSpent)
	if n, err := db.PurgeUploadTokens(ctx(t), time.Now().Add(-30*time.Minute)); err != nil || n != 1 {
		t.Fatalf("PurgeUploadTokens = %d, %v; want the expired one", n, err)
	}
	_, err = db.UploadToken(ctx(t), old.Hash)
	wantErr(t, "purged token", err, storage.ErrNotExist)
	if _, err := db.UploadToken(ctx(t), t3.Hash); err != nil {
		t.Fatalf("a valid token was purged: %v", err)
	}

	entries, n, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "uploadtoken.", User: "u"})
	if err != nil || n != 4 {
		t.Fatalf("audit: %d entries, %v; want 3 creations and a revocation: %+v", n, err, entries)
	}
	if e := entries[1]; e.Action != "uploadtoken.revoke" || e.Target != "u/uploadtokens/t3" || e.Actor != "issuer" {
		t.Errorf("revocation entry %+v", e)
	}
	if e := entries[0]; e.Action != "uploadtoken.create" || e.Target != "u/uploadtokens/t4" || e.Detail["uploads"] != 1.0 ||
		e.Detail["origin"] != "https://app.example" || fmt.Sprint(e.Detail["formats"]) != "[jpg png]" ||
		fmt.Sprint(e.Detail["metadataKeys"]) != "[album n]" {
		t.Errorf("creation entry %+v", e)
	}
	// One event per change, in order.
	var got4 []string
	for _, e := range pendingEvents(t, db, 4) {
		got4 = append(got4, strings.TrimPrefix(e.Type, "io.vitrine.")+" "+e.Subject)
	}
	if want := "[uploadtoken.created users/u/uploadtokens/t1 uploadtoken.created users/u/uploadtokens/t3 " +
		"uploadtoken.revoked users/u/uploadtokens/t3 uploadtoken.created users/u/uploadtokens/t4]"; fmt.Sprint(got4) != want {
		t.Errorf("events %v, want %s", got4, want)
	}
}

// hashOf is the hex SHA-256 of s.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// withToken is img made with the upload token id (Image.UploadToken).
func withToken(img *storage.Image, id string) *storage.Image {
	img.UploadToken = id
	return img
}

// testUploadTokenCommit checks that an image committed with an upload
// token (Image.UploadToken) spends a use in its transaction (whether it
// adds the image or finds it stored), names the token in its audit entry,
// and is not written at all once the token has no use left.
func testUploadTokenCommit(t *testing.T, db *storage.DB) {
	tok := uploadToken("c1", "u", 2)
	if err := db.CreateUploadToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	with := storage.WithActor(ctx(t), storage.Actor{Key: "issuer", Addr: "192.0.2.9"})
	if created, err := db.InsertImage(with, withToken(image("u", "a", base), "c1")); err != nil || !created {
		t.Fatalf("first upload: %v, %v", created, err)
	}
	if created, err := db.InsertImage(with, withToken(image("u", "a", base), "c1")); err != nil || created {
		t.Fatalf("the same image again: created %v, %v; want found", created, err)
	}
	_, err := db.InsertImage(with, withToken(image("u", "b", base), "c1"))
	wantErr(t, "a third upload with a 2-use token", err, storage.ErrUploadTokenSpent)
	if _, err := db.Image(ctx(t), "u", "b"); err == nil {
		t.Fatal("the image of a spent token was stored")
	}
	entries, n, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "image.create"})
	if err != nil || n != 1 {
		t.Fatalf("image.create entries: %d, %v; want 1", n, err)
	}
	if e := entries[0]; e.Actor != "issuer" || e.Detail["uploadToken"] != "c1" || e.Detail["bytes"] == nil {
		t.Errorf("audit entry %+v, want the issuer with uploadToken c1 beside the image's detail", e)
	}
}

// testUploadTokenRace checks that of uploads racing for a token's last
// use, exactly one commits, whatever the images.
func testUploadTokenRace(t *testing.T, db *storage.DB) {
	const n = 8
	if err := db.CreateUploadToken(ctx(t), uploadToken("r1", "race", 1)); err != nil {
		t.Fatal(err)
	}
	with := storage.WithActor(ctx(t), storage.Actor{Key: "issuer"})
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		won, spent  int
		unexpected  []error
		start       = make(chan struct{})
		identifiers = []string{"same", "same", "x1", "x2", "x3", "x4", "x5", "x6"}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := db.InsertImage(with, withToken(image("race", identifiers[i], base), "r1"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, storage.ErrUploadTokenSpent):
				spent++
			default:
				unexpected = append(unexpected, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(unexpected) > 0 || won != 1 || spent != n-1 {
		t.Fatalf("%d won, %d found the token spent, errors %v; want 1 and %d", won, spent, unexpected, n-1)
	}
	page, err := db.Images(ctx(t), storage.Query{Users: []string{"race"}})
	if err != nil || page.Hits != 1 {
		t.Fatalf("Images = %d, %v; want the one upload that won", page.Hits, err)
	}
}
