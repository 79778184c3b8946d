package storage_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWritePauseWaits: a pause waits for every instance live when it
// began, also one whose heartbeat lapses meanwhile (stalled with a write
// in flight, perhaps), and is done once each has acknowledged it.
func TestWritePauseWaits(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, "sqlite://"+filepath.Join(t.TempDir(), "vitrine.db"), nil)
	for _, inst := range []string{"a", "b"} {
		if err := db.Heartbeat(ctx, inst, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	p, err := db.PauseWrites(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := db.WriteState(ctx); err != nil || s.Pause != p.ID {
		t.Fatalf("state %+v, %v", s, err)
	}
	if err := db.AckPause(ctx, p.ID, "a"); err != nil {
		t.Fatal(err)
	}
	missing, err := p.Wait(ctx, 500*time.Millisecond) // b's heartbeat lapses meanwhile
	if err != nil || !slices.Equal(missing, []string{"b"}) {
		t.Fatalf("missing %v, %v; want b", missing, err)
	}
	if err := db.AckPause(ctx, p.ID, "b"); err != nil {
		t.Fatal(err)
	}
	if err := db.Heartbeat(ctx, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if missing, err := p.Wait(ctx, time.Second); err != nil || len(missing) != 0 {
		t.Fatalf("missing %v, %v once both acknowledged", missing, err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := db.WriteState(ctx); err != nil || s.Pause != "" {
		t.Fatalf("state after the release %+v, %v", s, err)
	}
}
