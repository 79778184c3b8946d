package storagetest

import (
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// testSessions covers the admin UI's sessions: create, read back, touch,
// expire and delete.
func testSessions(t *testing.T, db *storage.DB) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	s := storage.Session{IDHash: strings.Repeat("a", 64), PublicKey: "admin", PrivateKey: "private",
		CSRF: strings.Repeat("c", 64), Created: now.Add(-time.Hour), Seen: now.Add(-time.Minute)}
	old := s
	old.IDHash, old.Created = strings.Repeat("b", 64), now.Add(-48*time.Hour)
	idle := s
	idle.IDHash, idle.Seen = strings.Repeat("d", 64), now.Add(-2*time.Hour)
	for _, x := range []storage.Session{s, old, idle} {
		if err := db.CreateSession(ctx(t), x); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateSession(ctx(t), s); err == nil {
		t.Fatal("a second session with the same id was stored")
	}
	if err := db.CreateSession(ctx(t), storage.Session{IDHash: "short", PublicKey: "a", PrivateKey: "b", CSRF: "c"}); err == nil {
		t.Fatal("a session with a malformed id was stored")
	}
	got, err := db.Session(ctx(t), s.IDHash)
	if err != nil || got != s {
		t.Fatalf("Session = %+v, %v; want %+v", got, err, s)
	}
	if err := db.TouchSession(ctx(t), s.IDHash, now); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Session(ctx(t), s.IDHash); err != nil || !got.Seen.Equal(now) {
		t.Fatalf("after touch: %+v, %v", got, err)
	}
	if err := db.DeleteSessionsBefore(ctx(t), now.Add(-24*time.Hour), now.Add(-30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{old.IDHash, idle.IDHash} {
		_, err := db.Session(ctx(t), gone)
		wantErr(t, "expired session", err, storage.ErrNotExist)
	}
	if err := db.DeleteSession(ctx(t), s.IDHash); err != nil {
		t.Fatal(err)
	}
	_, err = db.Session(ctx(t), s.IDHash)
	wantErr(t, "deleted session", err, storage.ErrNotExist)
	if err := db.DeleteSession(ctx(t), s.IDHash); err != nil {
		t.Fatalf("deleting a missing session: %v", err)
	}
}
