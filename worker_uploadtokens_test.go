package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// TestUploadTokenWorker: a pass deletes the tokens that expired more than
// a day ago and keeps the others, so that a token expired this morning is
// still told from an unknown one.
func TestUploadTokenWorker(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "vitrine.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	for i, expired := range []time.Duration{49 * time.Hour, 23 * time.Hour, -time.Hour} {
		tok := storage.UploadToken{ID: string(rune('a' + i)), Hash: strings.Repeat(string(rune('a'+i)), 64), User: "u",
			PublicKey: "k", Uses: 1, MaxBytes: 1, MaxPixels: 1, Formats: []string{"png"},
			Created: now.Add(-expired - time.Hour), Expires: now.Add(-expired)}
		if err := db.CreateUploadToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := uploadTokenWorker(db, slog.Default()).pass(ctx); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, true} {
		_, err := db.UploadToken(ctx, strings.Repeat(string(rune('a'+i)), 64))
		if kept := err == nil; kept != want {
			t.Errorf("token %d kept %v (%v), want %v", i, kept, err, want)
		}
	}
}
