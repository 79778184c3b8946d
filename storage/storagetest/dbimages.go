package storagetest

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

func testInsertImage(t *testing.T, db *storage.DB) {
	if err := db.Ping(ctx(t)); err != nil {
		t.Fatal(err)
	}
	img := image("alice", "abc", base.Add(500*time.Millisecond))
	img.OriginalChecksum = "orig"
	img.Updated = time.Time{}
	mustInsert(t, db, img)
	got, err := db.Image(ctx(t), "alice", "abc")
	if err != nil {
		t.Fatal(err)
	}
	want := *image("alice", "abc", base)
	want.OriginalChecksum = "orig"
	if got.Version == 0 || got.Version != img.Version {
		t.Fatalf("Version = %d, InsertImage wrote back %d; want the same, non-zero", got.Version, img.Version)
	}
	want.Version = got.Version
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Image = %+v\nwant %+v", got, want)
	}
	if got.Added.Location() != time.UTC {
		t.Fatalf("Added location %v, want UTC", got.Added.Location())
	}
	if !img.Added.Equal(base) || !img.Updated.Equal(base) {
		t.Fatalf("InsertImage wrote back Added %v Updated %v, want %v", img.Added, img.Updated, base)
	}
	// A zero Added becomes now.
	before := time.Now().Add(-2 * time.Second)
	now := image("alice", "now", time.Time{})
	mustInsert(t, db, now)
	got, err = db.Image(ctx(t), "alice", "now")
	if err != nil {
		t.Fatal(err)
	}
	if got.Added.Before(before) || got.Added.After(time.Now().Add(time.Second)) || !got.Updated.Equal(got.Added) {
		t.Fatalf("zero Added stored as %v / %v", got.Added, got.Updated)
	}
	if got.OriginalChecksum != "" {
		t.Fatalf("OriginalChecksum = %q, want empty", got.OriginalChecksum)
	}
	_, err = db.Image(ctx(t), "alice", "missing")
	wantErr(t, "Image(missing)", err, storage.ErrNotExist)
	_, err = db.Image(ctx(t), "bob", "abc")
	wantErr(t, "Image(other user)", err, storage.ErrNotExist)
}

func testInsertImageExisting(t *testing.T, db *storage.DB) {
	mustInsert(t, db, image("alice", "abc", base))
	again := image("alice", "abc", base.Add(time.Hour))
	again.Size, again.Mime = 1, "image/gif"
	created, err := db.InsertImage(ctx(t), again)
	if err != nil || created {
		t.Fatalf("second InsertImage = %v, %v; want false, nil", created, err)
	}
	if again.Size != 300 || again.Mime != "image/png" || !again.Added.Equal(base) {
		t.Fatalf("existing record not loaded: %+v", again)
	}
	page, err := db.Images(ctx(t), storage.Query{})
	if err != nil || page.Hits != 1 {
		t.Fatalf("Images = %d hits, %v; want 1", page.Hits, err)
	}
}

func testInsertImageConcurrent(t *testing.T, db *storage.DB) {
	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		errs    []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img := image("race", "same", base)
			img.Size = int64(i)
			ok, err := db.InsertImage(ctx(t), img)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				created++
			}
			if err == nil && img.Identifier != "same" {
				errs = append(errs, fmt.Errorf("img not filled: %+v", img))
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent InsertImage errors: %v", errs)
	}
	if created != 1 {
		t.Fatalf("%d goroutines created the image, want 1", created)
	}
	page, err := db.Images(ctx(t), storage.Query{Users: []string{"race"}})
	if err != nil || page.Hits != 1 || len(page.Images) != 1 {
		t.Fatalf("Images = %+v, %v; want one row", page, err)
	}
}

func testInsertImageInvalid(t *testing.T, db *storage.DB) {
	for _, img := range []*storage.Image{
		image("", "abc", base),
		image("alice", "", base),
		image(strings.Repeat("u", 256), "abc", base),
	} {
		_, err := db.InsertImage(ctx(t), img)
		wantErr(t, fmt.Sprintf("InsertImage(%.10q/%q)", img.User, img.Identifier), err, storage.ErrInvalid)
	}
	long := image(strings.Repeat("u", 255), strings.Repeat("i", 255), base)
	long.Checksum = strings.Repeat("c", 128)
	mustInsert(t, db, long)
}

func testCaseSensitive(t *testing.T, db *storage.DB) {
	mustInsert(t, db, image("alice", "abc", base), image("alice", "ABC", base), image("Alice", "abc", base))
	page, err := db.Images(ctx(t), storage.Query{Users: []string{"alice"}, IDs: []string{"abc"}})
	if err != nil || page.Hits != 1 {
		t.Fatalf("case-sensitive filter = %d hits, %v; want 1", page.Hits, err)
	}
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "k", PrivateKey: "lower"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "K", PrivateKey: "upper"}); err != nil {
		t.Fatal(err)
	}
	k, err := db.Key(ctx(t), "K")
	if err != nil || k.PrivateKey != "upper" {
		t.Fatalf("Key(K) = %+v, %v", k, err)
	}
	users, err := db.Users(ctx(t))
	if err != nil || !reflect.DeepEqual(users, []string{"Alice", "alice"}) {
		t.Fatalf("Users = %q, %v; want byte order [Alice alice]", users, err)
	}
}

func testDeleteImage(t *testing.T, db *storage.DB) {
	mustInsert(t, db, image("alice", "a", base), image("alice", "b", base))
	for _, id := range []string{"a", "b"} {
		if err := db.SetMetadata(ctx(t), "alice", id, map[string]any{"k": id}); err != nil {
			t.Fatal(err)
		}
		if err := db.InsertShortURL(ctx(t), storage.ShortURL{ID: "s" + id, User: "alice", Image: id, Extension: "jpg"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteImage(ctx(t), "alice", "a"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Image(ctx(t), "alice", "a")
	wantErr(t, "Image after delete", err, storage.ErrNotExist)
	_, err = db.Metadata(ctx(t), "alice", "a")
	wantErr(t, "Metadata after delete", err, storage.ErrNotExist)
	_, err = db.ShortURL(ctx(t), "sa")
	wantErr(t, "ShortURL after delete", err, storage.ErrNotExist)
	wantErr(t, "second DeleteImage", db.DeleteImage(ctx(t), "alice", "a"), storage.ErrNotExist)
	// Re-adding the image does not resurrect its metadata.
	mustInsert(t, db, image("alice", "a", base))
	md, err := db.Metadata(ctx(t), "alice", "a")
	if err != nil || len(md) != 0 {
		t.Fatalf("Metadata of re-added image = %v, %v; want empty", md, err)
	}
	// The other image is untouched.
	md, err = db.Metadata(ctx(t), "alice", "b")
	if err != nil || md["k"] != "b" {
		t.Fatalf("Metadata(b) = %v, %v", md, err)
	}
	if _, err := db.ShortURL(ctx(t), "sb"); err != nil {
		t.Fatal(err)
	}
}
