package storagetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/vitrine/vitrine/storage"
)

func testMetadata(t *testing.T, db *storage.DB) {
	mustInsert(t, db, image("alice", "abc", base))
	md, err := db.Metadata(ctx(t), "alice", "abc")
	if err != nil || md == nil || len(md) != 0 {
		t.Fatalf("Metadata(none) = %#v, %v; want empty map", md, err)
	}
	doc := map[string]any{
		"title": "Ünïcode ✓", "big": json.Number("12345678901234567890"), "pi": 3.25,
		"nested": map[string]any{"list": []any{1, "two", nil}}, "flag": false,
	}
	if err := db.SetMetadata(ctx(t), "alice", "abc", doc); err != nil {
		t.Fatal(err)
	}
	img, err := db.Image(ctx(t), "alice", "abc")
	if err != nil || !img.Updated.After(base) || !img.Added.Equal(base) {
		t.Fatalf("after SetMetadata Image = %+v, %v; want Updated bumped, Added kept", img, err)
	}
	md, err = db.Metadata(ctx(t), "alice", "abc")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"title": "Ünïcode ✓", "big": json.Number("12345678901234567890"), "pi": json.Number("3.25"),
		"nested": map[string]any{"list": []any{json.Number("1"), "two", nil}}, "flag": false,
	}
	if !reflect.DeepEqual(md, want) {
		t.Fatalf("Metadata = %#v\nwant %#v", md, want)
	}
	merged, err := db.MergeMetadata(ctx(t), "alice", "abc", map[string]any{"title": "new", "extra": 2, "nested": "flat"})
	if err != nil {
		t.Fatal(err)
	}
	wantMerged := map[string]any{
		"title": "new", "big": json.Number("12345678901234567890"), "pi": json.Number("3.25"),
		"nested": "flat", "flag": false, "extra": json.Number("2"),
	}
	if !reflect.DeepEqual(merged, wantMerged) {
		t.Fatalf("MergeMetadata = %#v\nwant %#v", merged, wantMerged)
	}
	md, err = db.Metadata(ctx(t), "alice", "abc")
	if err != nil || !reflect.DeepEqual(md, wantMerged) {
		t.Fatalf("Metadata after merge = %#v, %v", md, err)
	}
	if err := db.SetMetadata(ctx(t), "alice", "abc", map[string]any{"only": "this"}); err != nil {
		t.Fatal(err)
	}
	md, err = db.Metadata(ctx(t), "alice", "abc")
	if err != nil || !reflect.DeepEqual(md, map[string]any{"only": "this"}) {
		t.Fatalf("Metadata after replace = %#v, %v", md, err)
	}
	if err := db.DeleteMetadata(ctx(t), "alice", "abc"); err != nil {
		t.Fatal(err)
	}
	md, err = db.Metadata(ctx(t), "alice", "abc")
	if err != nil || len(md) != 0 {
		t.Fatalf("Metadata after delete = %#v, %v", md, err)
	}
	merged, err = db.MergeMetadata(ctx(t), "alice", "abc", map[string]any{"a": "b"})
	if err != nil || !reflect.DeepEqual(merged, map[string]any{"a": "b"}) {
		t.Fatalf("MergeMetadata into empty = %#v, %v", merged, err)
	}
	testMetadataMissingImage(t, db)
	testMetadataConcurrentMerges(t, db)
}

// testMetadataMissingImage: every metadata call on a missing image is
// ErrNotExist and creates nothing.
func testMetadataMissingImage(t *testing.T, db *storage.DB) {
	_, err := db.Metadata(ctx(t), "alice", "nope")
	wantErr(t, "Metadata(missing)", err, storage.ErrNotExist)
	wantErr(t, "SetMetadata(missing)", db.SetMetadata(ctx(t), "alice", "nope", map[string]any{}), storage.ErrNotExist)
	_, err = db.MergeMetadata(ctx(t), "alice", "nope", map[string]any{})
	wantErr(t, "MergeMetadata(missing)", err, storage.ErrNotExist)
	wantErr(t, "DeleteMetadata(missing)", db.DeleteMetadata(ctx(t), "alice", "nope"), storage.ErrNotExist)
	if _, err := db.Image(ctx(t), "alice", "nope"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("metadata write created an image: %v", err)
	}
}

// testMetadataConcurrentMerges: concurrent merges of different keys into
// alice/abc (holding one key) all land.
func testMetadataConcurrentMerges(t *testing.T, db *storage.DB) {
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = db.MergeMetadata(ctx(t), "alice", "abc", map[string]any{fmt.Sprint("k", i): i})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	md, err := db.Metadata(ctx(t), "alice", "abc")
	if err != nil || len(md) != 9 {
		t.Fatalf("after concurrent merges Metadata = %v, %v; want 9 keys", md, err)
	}
}

func testShortURLs(t *testing.T, db *storage.DB) {
	mustInsert(t, db, image("alice", "abc", base), image("alice", "def", base))
	long := strings.Repeat("t[]=thumbnail:width=10&", 200)
	urls := []storage.ShortURL{
		{ID: "aaaaaaa", User: "alice", Image: "abc", Extension: "png", Query: "t[]=thumbnail"},
		{ID: "bbbbbbb", User: "alice", Image: "abc"},
		{ID: "ccccccc", User: "alice", Image: "abc", Extension: "jpg", Query: long},
		{ID: "ddddddd", User: "alice", Image: "def", Extension: "png", Query: "t[]=thumbnail"},
	}
	for _, u := range urls {
		if err := db.InsertShortURL(ctx(t), u); err != nil {
			t.Fatalf("InsertShortURL(%s): %v", u.ID, err)
		}
	}
	for _, u := range urls {
		got, err := db.ShortURL(ctx(t), u.ID)
		if err != nil || got != u {
			t.Fatalf("ShortURL(%s) = %+v, %v; want %+v", u.ID, got, err, u)
		}
		got, err = db.FindShortURL(ctx(t), u.User, u.Image, u.Extension, u.Query)
		if err != nil || got != u {
			t.Fatalf("FindShortURL(%+v) = %+v, %v", u, got, err)
		}
	}
	got, err := db.ShortURLsOf(ctx(t), "alice", "abc")
	if err != nil || !reflect.DeepEqual(got, urls[:3]) {
		t.Fatalf("ShortURLsOf(alice/abc) = %+v, %v; want %+v", got, err, urls[:3])
	}
	if got, err := db.ShortURLsOf(ctx(t), "bob", "abc"); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("ShortURLsOf(bob/abc) = %#v, %v; want empty", got, err)
	}
	wantErr(t, "InsertShortURL(taken id)", db.InsertShortURL(ctx(t), storage.ShortURL{ID: "aaaaaaa", User: "alice", Image: "def", Query: "x"}), storage.ErrExist)
	wantErr(t, "InsertShortURL(same target)", db.InsertShortURL(ctx(t), storage.ShortURL{ID: "eeeeeee", User: "alice", Image: "abc", Extension: "png", Query: "t[]=thumbnail"}), storage.ErrExist)
	wantErr(t, "InsertShortURL(missing image)", db.InsertShortURL(ctx(t), storage.ShortURL{ID: "fffffff", User: "alice", Image: "nope"}), storage.ErrNotExist)
	wantErr(t, "InsertShortURL(empty id)", db.InsertShortURL(ctx(t), storage.ShortURL{User: "alice", Image: "abc"}), storage.ErrInvalid)
	_, err = db.ShortURL(ctx(t), "zzzzzzz")
	wantErr(t, "ShortURL(missing)", err, storage.ErrNotExist)
	_, err = db.FindShortURL(ctx(t), "alice", "abc", "gif", "")
	wantErr(t, "FindShortURL(missing)", err, storage.ErrNotExist)
	_, err = db.FindShortURL(ctx(t), "alice", "abc", "", "t[]=thumbnail")
	wantErr(t, "FindShortURL(ext differs)", err, storage.ErrNotExist)

	wantErr(t, "DeleteShortURL(other image)", db.DeleteShortURL(ctx(t), "alice", "def", "aaaaaaa"), storage.ErrNotExist)
	wantErr(t, "DeleteShortURL(other user)", db.DeleteShortURL(ctx(t), "bob", "abc", "aaaaaaa"), storage.ErrNotExist)
	if err := db.DeleteShortURL(ctx(t), "alice", "abc", "aaaaaaa"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "DeleteShortURL(again)", db.DeleteShortURL(ctx(t), "alice", "abc", "aaaaaaa"), storage.ErrNotExist)
	if err := db.DeleteShortURLs(ctx(t), "alice", "abc"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"aaaaaaa", "bbbbbbb", "ccccccc"} {
		_, err := db.ShortURL(ctx(t), id)
		wantErr(t, "ShortURL after DeleteShortURLs", err, storage.ErrNotExist)
	}
	if _, err := db.ShortURL(ctx(t), "ddddddd"); err != nil {
		t.Fatalf("other image's short URL gone: %v", err)
	}
	if got, err := db.ShortURLsOf(ctx(t), "alice", "abc"); err != nil || len(got) != 0 {
		t.Fatalf("ShortURLsOf after DeleteShortURLs = %+v, %v; want none", got, err)
	}
	if err := db.DeleteShortURLs(ctx(t), "alice", "abc"); err != nil {
		t.Fatalf("DeleteShortURLs(none left) = %v", err)
	}
	// The freed target can get a new short URL.
	if err := db.InsertShortURL(ctx(t), storage.ShortURL{ID: "ggggggg", User: "alice", Image: "abc", Extension: "png", Query: "t[]=thumbnail"}); err != nil {
		t.Fatal(err)
	}
}
