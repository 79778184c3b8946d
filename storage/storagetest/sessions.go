package storagetest

import (
	"slices"
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
		CSRF: strings.Repeat("c", 64), Created: now.Add(-time.Hour), Seen: now.Add(-time.Minute),
		Addr: "192.0.2.1", UserAgent: "Mozilla/5.0 (test)"}
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
	var listed []string
	err = db.SessionsOf(ctx(t), "admin", func(idHash, addr, ua string, created, seen time.Time) {
		listed = append(listed, idHash[:1]+" "+addr+" "+ua)
	})
	if want := []string{"a 192.0.2.1 Mozilla/5.0 (test)", "b 192.0.2.1 Mozilla/5.0 (test)", "d 192.0.2.1 Mozilla/5.0 (test)"}; err != nil || !slices.Equal(listed, want) {
		t.Fatalf("SessionsOf = %q, %v; want %q (most recently seen first)", listed, err, want)
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
	other := s
	other.PublicKey = "other"
	for _, id := range []string{"e", "f"} {
		s.IDHash, other.IDHash = strings.Repeat(id, 64), strings.Repeat(id+"1", 32)
		if err := db.CreateSession(ctx(t), s); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateSession(ctx(t), other); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.DeleteSessionsOf(ctx(t), "admin"); err != nil || n != 2 {
		t.Fatalf("DeleteSessionsOf = %d, %v; want 2", n, err)
	}
	if _, err := db.Session(ctx(t), other.IDHash); err != nil {
		t.Fatalf("another key's session went too: %v", err)
	}
}
