package storage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// backupFixture is a SQLite store of n images, each with its blob, and a
// backup of it.
func backupFixture(t *testing.T, n int) (db *storage.DB, blobs, dest *storage.Blobs, r *storage.BackupReport) {
	t.Helper()
	ctx := context.Background()
	db = openDB(t, "sqlite://"+filepath.Join(t.TempDir(), "vitrine.db"), nil)
	blobs, dest = memBlobs(t), memBlobs(t)
	for i := range n {
		img := &storage.Image{User: "u", Identifier: fmt.Sprint("img", i), Size: 5, Extension: "png", Mime: "image/png",
			Width: 1, Height: 1, Checksum: fmt.Sprint("sum", i), Added: time.Now(), Updated: time.Now(), BlobToken: storage.NewBlobToken()}
		if err := blobs.Put(ctx, img.Key(), []byte(fmt.Sprint("bytes", i%3))); err != nil {
			t.Fatal(err)
		}
		if _, err := db.InsertImage(ctx, img); err != nil {
			t.Fatal(err)
		}
	}
	r, err := storage.Backup(ctx, db, blobs, dest, storage.BackupOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return db, blobs, dest, r
}

func memBlobs(t *testing.T) *storage.Blobs {
	t.Helper()
	b, err := storage.OpenBlobs(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestBackupByContent: blobs are kept once by content (6 blobs of 3
// contents are 3 writes), and a second backup with nothing new writes
// nothing.
func TestBackupByContent(t *testing.T) {
	db, blobs, dest, r := backupFixture(t, 6)
	if r.Blobs != 6 || r.Copied != 3 {
		t.Fatalf("first backup: %+v; want 6 blobs, 3 copied (3 distinct contents)", r)
	}
	again, err := storage.Backup(context.Background(), db, blobs, dest, storage.BackupOptions{TempDir: t.TempDir()})
	if err != nil || again.Blobs != 6 || again.Copied != 0 || again.Snapshot == r.Snapshot {
		t.Fatalf("second backup: %+v, %v; want 6 blobs, none copied, a snapshot of its own", again, err)
	}
	names, err := storage.Snapshots(context.Background(), dest)
	if err != nil || len(names) != 2 {
		t.Fatalf("snapshots %v, %v", names, err)
	}
}

// TestRestoreRefusals: a restore refuses a target that is not empty, goes
// on where a restore of the same snapshot stopped, and names a blob the
// backup holds damaged.
func TestRestoreRefusals(t *testing.T) {
	ctx := context.Background()
	_, blobs, dest, r := backupFixture(t, 4)
	target := func() storage.RestoreTarget {
		return storage.RestoreTarget{DatabaseFile: filepath.Join(t.TempDir(), "vitrine.db"), Blobs: memBlobs(t)}
	}

	foreign := target()
	if err := foreign.Blobs.Put(ctx, "images/x/other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Restore(ctx, dest, r.Snapshot, foreign, nil); !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "images/x/other") {
		t.Fatalf("restore into a store holding another blob: %v", err)
	}
	existing := target()
	if err := os.WriteFile(existing.DatabaseFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Restore(ctx, dest, r.Snapshot, existing, nil); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("restore over a database file: %v", err)
	}

	// Half-way: one blob of the snapshot is there already.
	half := target()
	m, err := storage.ReadManifest(ctx, dest, r.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	data, err := blobs.Get(ctx, m.Blobs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := half.Blobs.Put(ctx, m.Blobs[0].Key, data); err != nil {
		t.Fatal(err)
	}
	got, err := storage.Restore(ctx, dest, r.Snapshot, half, nil)
	if err != nil || got.Blobs != 4 || got.Copied != 3 {
		t.Fatalf("restore that goes on: %+v, %v; want 4 blobs, 3 copied", got, err)
	}
	restored := openDB(t, "sqlite://"+half.DatabaseFile, nil)
	c, err := storage.Check(ctx, restored, half.Blobs, storage.CheckOptions{})
	if err != nil || c.Images != 4 || c.Unrepaired() != 0 {
		t.Fatalf("check of the restored store: %+v, %v", c, err)
	}

	// Damaged: a blob of the backup no longer matches its checksum.
	if err := dest.Put(ctx, "blobs/"+m.Blobs[1].SHA256[:2]+"/"+m.Blobs[1].SHA256, []byte("rot")); err != nil {
		t.Fatal(err)
	}
	damaged := target()
	got, err = storage.Restore(ctx, dest, r.Snapshot, damaged, nil)
	if err == nil || len(got.Failed) == 0 || !strings.Contains(got.Failed[0], "damaged") {
		t.Fatalf("restore from a damaged backup: %+v, %v", got, err)
	}
	if _, err := os.Stat(damaged.DatabaseFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a restore that failed wrote the database: %v", err)
	}
}
