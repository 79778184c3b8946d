package storage_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// copyFixture fills db and blobs with n images (metadata on each, one
// deleted), a key with a rule and a paused webhook: rows of every column
// kind, and columns sealed with the store's secret.
func copyFixture(t *testing.T, db *storage.DB, blobs *storage.Blobs, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		img := &storage.Image{User: "u", Identifier: fmt.Sprint("img", i), Size: 5, Extension: "png", Mime: "image/png",
			Width: 1 + i, Height: 1, Checksum: fmt.Sprint("sum", i), Added: time.Now(), Updated: time.Now(), BlobToken: storage.NewBlobToken()}
		if err := blobs.Put(ctx, img.Key(), []byte(fmt.Sprint("bytes", i))); err != nil {
			t.Fatal(err)
		}
		if _, err := db.InsertImage(ctx, img); err != nil {
			t.Fatal(err)
		}
		if err := db.SetMetadata(ctx, "u", img.Identifier, map[string]any{"i": i, "x": 0.25, "s": "ünï"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.InsertShortURL(ctx, storage.ShortURL{ID: "s0", User: "u", Image: "img0", Extension: "png"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateKey(ctx, storage.Key{PublicKey: "copier", PrivateKey: "copier-private"},
		[]storage.Rule{{Resources: []string{"image.get"}, Users: []string{"u"}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateWebhook(ctx, &storage.Webhook{ID: "hook", URL: "https://example.test/h", Events: []string{"*"},
		Users: []string{"*"}, Secret: "whsec_c2VjcmV0", Active: false}); err != nil {
		t.Fatal(err)
	}
}

// TestCopyAcrossDialects copies a store SQLite -> PostgreSQL -> MySQL ->
// SQLite, each with its own secret: after each hop the target compares
// equal, its sealed values open with its own secret, a rerun changes
// nothing, and a change on the source is carried by the next run (a
// deletion only by the cutover).
func TestCopyAcrossDialects(t *testing.T) {
	ctx := context.Background()
	type store struct {
		db    *storage.DB
		blobs *storage.Blobs
	}
	dir := t.TempDir()
	hops := []store{{openDB(t, "sqlite://"+filepath.Join(dir, "a.db"), []byte("secret-a")), memBlobs(t)}}
	hops = append(hops, store{openDB(t, storagetest.PostgresDSN(t), []byte("secret-b")), memBlobs(t)})
	hops = append(hops, store{openDB(t, storagetest.MySQLDSN(t), []byte("secret-c")), memBlobs(t)})
	hops = append(hops, store{openDB(t, "sqlite://"+filepath.Join(dir, "d.db"), nil), memBlobs(t)})
	copyFixture(t, hops[0].db, hops[0].blobs, 30)
	for i := 1; i < len(hops); i++ {
		src, dst := hops[i-1], hops[i]
		opts := storage.CopyOptions{TempDir: t.TempDir()}
		r, err := storage.Copy(ctx, src.db, src.blobs, dst.db, dst.blobs, opts)
		if err != nil {
			t.Fatalf("hop %d: %v", i, err)
		}
		if p := r.Passes[0]; p.Inserted == 0 || p.CopiedBlobs != 30 {
			t.Fatalf("hop %d: first pass %+v", i, p)
		}
		again, err := storage.Copy(ctx, src.db, src.blobs, dst.db, dst.blobs, opts)
		if err != nil {
			t.Fatal(err)
		}
		if p := again.Passes[0]; p.Inserted+p.Updated+p.Deleted+p.CopiedBlobs != 0 {
			t.Fatalf("hop %d: a rerun changed %+v", i, p)
		}
		// A change and a deletion on the source: the rerun carries the
		// change; the cutover the deletion too, and compares equal.
		if err := src.db.SetMetadata(ctx, "u", "img1", map[string]any{"changed": true}); err != nil {
			t.Fatal(err)
		}
		if err := src.db.DeleteImage(ctx, "u", "img2"); err != nil {
			t.Fatal(err)
		}
		// A short URL made again: a new id, the same unique lookup.
		old, err := src.db.FindShortURL(ctx, "u", "img0", "png", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := src.db.DeleteShortURL(ctx, "u", "img0", old.ID); err != nil {
			t.Fatal(err)
		}
		short := fmt.Sprint("s", i)
		if err := src.db.InsertShortURL(ctx, storage.ShortURL{ID: short, User: "u", Image: "img0", Extension: "png"}); err != nil {
			t.Fatal(err)
		}
		opts.Cutover, opts.Target = true, fmt.Sprint("hop ", i)
		cut, err := storage.Copy(ctx, src.db, src.blobs, dst.db, dst.blobs, opts)
		if err != nil {
			t.Fatalf("hop %d: cutover: %v", i, err)
		}
		if !cut.Moved || cut.Compare == nil || cut.Compare.RowsDiffer != 0 || cut.Compare.SumsMismatch != 0 || cut.Compare.BlobsSummed == 0 {
			t.Fatalf("hop %d: cutover %+v, compare %+v", i, cut, cut.Compare)
		}
		if p := cut.Passes[0]; p.Updated == 0 || p.Deleted == 0 {
			t.Fatalf("hop %d: the pass after a change and a deletion: %+v", i, p)
		}
		if s, err := src.db.WriteState(ctx); err != nil || s.Moved != opts.Target {
			t.Fatalf("hop %d: source state %+v, %v", i, s, err)
		}
		if _, err := storage.Copy(ctx, src.db, src.blobs, dst.db, dst.blobs, opts); err == nil {
			t.Fatalf("hop %d: a second cutover of a moved store succeeded", i)
		}
		if err := src.db.ReleaseWrites(ctx); err != nil {
			t.Fatal(err)
		}
		k, err := dst.db.Key(ctx, "copier")
		if err != nil || k.PrivateKey != "copier-private" {
			t.Fatalf("hop %d: key %+v, %v", i, k, err)
		}
		w, err := dst.db.Webhook(ctx, "hook")
		if err != nil || w.Secret != "whsec_c2VjcmV0" || w.Active {
			t.Fatalf("hop %d: webhook %+v, %v", i, w, err)
		}
		md, err := dst.db.Metadata(ctx, "u", "img1")
		if err != nil || md["changed"] != true {
			t.Fatalf("hop %d: metadata %v, %v", i, md, err)
		}
		if u, err := dst.db.ShortURL(ctx, short); err != nil || u.Image != "img0" {
			t.Fatalf("hop %d: the short URL made again: %+v, %v", i, u, err)
		}
		if _, err := dst.db.Image(ctx, "u", "img2"); err == nil {
			t.Fatalf("hop %d: the image deleted on the source is on the target", i)
		}
		// The target goes on from the copied ids (a rule is a new row).
		if _, err := dst.db.CreateKey(ctx, storage.Key{PublicKey: fmt.Sprint("after", i), PrivateKey: "p"},
			[]storage.Rule{{Resources: []string{"image.get"}, Users: []string{"u"}}}); err != nil {
			t.Fatalf("hop %d: a rule on the target: %v", i, err)
		}
		// The next hop starts from this one's state.
		if err := dst.db.SetMetadata(ctx, "u", "img1", map[string]any{}); err != nil {
			t.Fatal(err)
		}
		if _, err := dst.db.InsertImage(ctx, &storage.Image{User: "u", Identifier: "img2", Size: 5, Extension: "png", Mime: "image/png",
			Width: 1, Height: 1, Checksum: "sum2", Added: time.Now(), Updated: time.Now(), BlobToken: storage.NewBlobToken()}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopyRefusesItself: a copy onto its own database or blob store is
// refused before anything is written.
func TestCopyRefusesItself(t *testing.T) {
	ctx := context.Background()
	path := "sqlite://" + filepath.Join(t.TempDir(), "a.db")
	a, b := openDB(t, path, nil), memBlobs(t)
	if _, err := storage.Copy(ctx, a, b, openDB(t, path, nil), memBlobs(t), storage.CopyOptions{}); err == nil {
		t.Fatal("a copy onto its own database succeeded")
	}
	if _, err := storage.Copy(ctx, a, b, openDB(t, "sqlite://"+filepath.Join(t.TempDir(), "b.db"), nil), b, storage.CopyOptions{}); err == nil {
		t.Fatal("a copy onto its own blob store succeeded")
	}
}

// TestBackupOfServerDatabases: a backup of a PostgreSQL store holds its
// rows as an SQLite file; restored into MySQL (LoadDump) with the same
// secret, every row is there, sealed values open, and a restore into a
// database that holds rows is refused.
func TestBackupOfServerDatabases(t *testing.T) {
	ctx := context.Background()
	secret := []byte("one-secret")
	pg, blobs, dest := openDB(t, storagetest.PostgresDSN(t), secret), memBlobs(t), memBlobs(t)
	copyFixture(t, pg, blobs, 12)
	r, err := storage.Backup(ctx, pg, blobs, dest, storage.BackupOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Blobs != 12 || !r.Until.After(r.Taken) {
		t.Fatalf("backup of PostgreSQL: %+v", r)
	}
	file := filepath.Join(t.TempDir(), "vitrine.db")
	restored := memBlobs(t)
	if _, err := storage.Restore(ctx, dest, r.Snapshot, storage.RestoreTarget{DatabaseFile: file, Blobs: restored}, nil); err != nil {
		t.Fatal(err)
	}
	my := openDB(t, storagetest.MySQLDSN(t), secret)
	if err := storage.LoadDump(ctx, file, my); err != nil {
		t.Fatal(err)
	}
	cmp, err := storage.Copy(ctx, pg, blobs, my, restored, storage.CopyOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p := cmp.Passes[0]; p.Inserted+p.Updated+p.Deleted+p.CopiedBlobs != 0 {
		t.Fatalf("the restored store differs from the source: %+v", p)
	}
	if k, err := my.Key(ctx, "copier"); err != nil || k.PrivateKey != "copier-private" {
		t.Fatalf("restored key %+v, %v", k, err)
	}
	if err := storage.LoadDump(ctx, file, my); err == nil || !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("a restore into a database that holds rows: %v", err)
	}
}
