package storagetest

import (
	"context"
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

// TestDB runs the database conformance suite. open returns a fresh, empty
// DB opened without a secret; it must arrange its own cleanup. The
// encryption cases reopen nothing: they use OpenWithSecret when given.
func TestDB(t *testing.T, open func(t *testing.T) *storage.DB) {
	TestDBWithSecret(t, open, nil)
}

// TestDBWithSecret is TestDB plus the key-encryption cases. openSecret
// opens a fresh, empty DB with the given secret; reopen, if the backend can,
// opens the same database again with another secret (it may be nil).
func TestDBWithSecret(t *testing.T, open func(t *testing.T) *storage.DB, openSecret func(t *testing.T, secret []byte) (db *storage.DB, reopen func(secret []byte) *storage.DB)) {
	cases := []struct {
		name string
		fn   func(t *testing.T, db *storage.DB)
	}{
		{"InsertAndGetImage", testInsertImage},
		{"InsertImageExisting", testInsertImageExisting},
		{"InsertImageConcurrent", testInsertImageConcurrent},
		{"InsertImageInvalid", testInsertImageInvalid},
		{"CaseSensitiveNames", testCaseSensitive},
		{"DeleteImageCascades", testDeleteImage},
		{"ListFilters", testListFilters},
		{"ListSortAndPaging", testListSort},
		{"ListWithMetadata", testListMetadata},
		{"ListMetadataFilter", testListMetadataFilter},
		{"LastModifiedUsersStats", testLastModified},
		{"Metadata", testMetadata},
		{"ShortURLs", testShortURLs},
		{"Keys", testKeys},
		{"Groups", testGroups},
		{"Rules", testRules},
		{"RulesCascade", testRulesCascade},
		{"Sessions", testSessions},
		{"ListHitsFollowWrites", testListHits},
		{"VariantCache", testVariantCache},
		{"VariantCacheLRU", testVariantCacheLRU},
		{"VariantCacheShared", testVariantCacheShared},
		{"VariantCacheMaxAge", testVariantCacheMaxAge},
		{"QueueUpload", testQueueUpload},
		{"QueueReservationLost", testQueueReservationLost},
		{"QueueDelete", testQueueDelete},
		{"QueueVariantOfDeletedImage", testQueueVariantOfDeletedImage},
		{"QueueFailures", testQueueFailures},
		{"QueueConcurrentCollectors", testQueueConcurrentCollectors},
		{"Check", testCheck},
		{"Variations", testVariations},
		{"VariationsFailures", testVariationsFailures},
		{"VariationsCheck", testVariationsCheck},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, open(t))
		})
	}
	if openSecret != nil {
		t.Run("KeyEncryption", func(t *testing.T) { testKeyEncryption(t, openSecret) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// base is a fixed, whole-second time for test records.
var base = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func image(user, id string, added time.Time) *storage.Image {
	return &storage.Image{
		User: user, Identifier: id, Size: int64(len(id)) * 100, Extension: "png", Mime: "image/png",
		Width: 10, Height: 20, Checksum: "sum-" + id, Added: added, Updated: added,
	}
}

func mustInsert(t *testing.T, db *storage.DB, imgs ...*storage.Image) {
	t.Helper()
	for _, img := range imgs {
		created, err := db.InsertImage(ctx(t), img)
		if err != nil || !created {
			t.Fatalf("InsertImage(%s/%s) = %v, %v; want true, nil", img.User, img.Identifier, created, err)
		}
	}
}

func wantErr(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: error %v, want %v", what, err, kind)
	}
}

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

// listFixture inserts 6 images over 3 users, one minute apart.
func listFixture(t *testing.T, db *storage.DB) {
	for i, u := range []struct{ user, id string }{
		{"alice", "a1"}, {"bob", "b1"}, {"alice", "a2"}, {"carol", "c1"}, {"bob", "b2"}, {"alice", "a3"},
	} {
		img := image(u.user, u.id, base.Add(time.Duration(i)*time.Minute))
		img.Size = int64(100 * (6 - i))
		img.Width = i % 2
		if i%2 == 0 {
			img.OriginalChecksum = "o-" + u.id
		}
		if u.id == "b2" {
			img.Checksum = "sum-a1"
			img.Mime = "image/jpeg"
		}
		mustInsert(t, db, img)
	}
}

func ids(p storage.Page) []string {
	out := []string{}
	for _, img := range p.Images {
		out = append(out, img.Identifier)
	}
	return out
}

func testListFilters(t *testing.T, db *storage.DB) {
	page, err := db.Images(ctx(t), storage.Query{})
	if err != nil || page.Hits != 0 || page.Images == nil {
		t.Fatalf("empty Images = %+v, %v; want 0 hits, non-nil slice", page, err)
	}
	listFixture(t, db)
	cases := []listCase{
		{"all, added desc", storage.Query{}, []string{"a3", "b2", "c1", "a2", "b1", "a1"}},
		{"one user", storage.Query{Users: []string{"alice"}}, []string{"a3", "a2", "a1"}},
		{"two users", storage.Query{Users: []string{"bob", "carol"}}, []string{"b2", "c1", "b1"}},
		{"unknown user", storage.Query{Users: []string{"dave"}}, []string{}},
		{"from inclusive", storage.Query{From: base.Add(4 * time.Minute)}, []string{"a3", "b2"}},
		{"to inclusive", storage.Query{To: base.Add(time.Minute)}, []string{"b1", "a1"}},
		{"from and to", storage.Query{From: base.Add(time.Minute), To: base.Add(3 * time.Minute)}, []string{"c1", "a2", "b1"}},
		{"ids", storage.Query{IDs: []string{"a1", "c1", "zz"}}, []string{"c1", "a1"}},
		{"checksums", storage.Query{Checksums: []string{"sum-a1"}}, []string{"b2", "a1"}},
		{"original checksums", storage.Query{OriginalChecksums: []string{"o-a1", "o-c1", "o-b1"}}, []string{"a1"}},
		{"AND across lists", storage.Query{Users: []string{"bob"}, Checksums: []string{"sum-a1", "sum-b1"}, IDs: []string{"b2"}}, []string{"b2"}},
		{"AND empty", storage.Query{Users: []string{"alice"}, IDs: []string{"b1"}}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := checkList(t, db, c)
			for _, img := range page.Images {
				if img.Metadata != nil {
					t.Fatalf("Metadata filled without WithMetadata: %v", img.Metadata)
				}
			}
		})
	}
}

func testListSort(t *testing.T, db *storage.DB) {
	listFixture(t, db)
	cases := []struct {
		name string
		q    storage.Query
		want []string
		hits int
	}{
		{"added asc", storage.Query{Sort: []storage.SortKey{{Field: "added"}}}, []string{"a1", "b1", "a2", "c1", "b2", "a3"}, 6},
		{"size asc", storage.Query{Sort: []storage.SortKey{{Field: "size"}}}, []string{"a3", "b2", "c1", "a2", "b1", "a1"}, 6},
		{"user then id desc", storage.Query{Sort: []storage.SortKey{{Field: "user"}, {Field: "imageIdentifier", Desc: true}}}, []string{"a3", "a2", "a1", "b2", "b1", "c1"}, 6},
		{"width then tiebreak", storage.Query{Sort: []storage.SortKey{{Field: "width", Desc: true}}}, []string{"a3", "b1", "c1", "a1", "a2", "b2"}, 6},
		{"mimeType alias", storage.Query{Sort: []storage.SortKey{{Field: "mimeType", Desc: true}}}, []string{"a1", "a2", "a3", "b1", "c1", "b2"}, 6},
		{"mime", storage.Query{Sort: []storage.SortKey{{Field: "mime"}}}, []string{"b2", "a1", "a2", "a3", "b1", "c1"}, 6},
		{"originalChecksum nulls as empty", storage.Query{Sort: []storage.SortKey{{Field: "originalChecksum"}}}, []string{"a3", "b1", "c1", "a1", "a2", "b2"}, 6},
		{"page 1", storage.Query{Limit: 4, Page: 1}, []string{"a3", "b2", "c1", "a2"}, 6},
		{"page 0 is 1", storage.Query{Limit: 4}, []string{"a3", "b2", "c1", "a2"}, 6},
		{"page 2", storage.Query{Limit: 4, Page: 2}, []string{"b1", "a1"}, 6},
		{"page past end", storage.Query{Limit: 4, Page: 3}, []string{}, 6},
		{"filtered page", storage.Query{Users: []string{"alice"}, Limit: 2, Page: 2}, []string{"a1"}, 3},
		{"sort every field", storage.Query{Sort: []storage.SortKey{
			{Field: "extension"}, {Field: "height"}, {Field: "updated", Desc: true}, {Field: "checksum"},
		}}, []string{"a3", "b2", "c1", "a2", "b1", "a1"}, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := db.Images(ctx(t), c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(page); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ids = %q, want %q", got, c.want)
			}
			if page.Hits != c.hits {
				t.Fatalf("Hits = %d, want %d", page.Hits, c.hits)
			}
		})
	}
	for _, q := range []storage.Query{
		{Sort: []storage.SortKey{{Field: "bogus"}}},
		{Sort: []storage.SortKey{{Field: "user_name"}}},
		{Page: -1},
		{Limit: -1},
	} {
		_, err := db.Images(ctx(t), q)
		wantErr(t, fmt.Sprintf("Images(%+v)", q), err, storage.ErrInvalid)
	}
}

func testListMetadata(t *testing.T, db *storage.DB) {
	listFixture(t, db)
	if err := db.SetMetadata(ctx(t), "alice", "a3", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetMetadata(ctx(t), "bob", "b1", map[string]any{"s": "x"}); err != nil {
		t.Fatal(err)
	}
	page, err := db.Images(ctx(t), storage.Query{WithMetadata: true, Sort: []storage.SortKey{{Field: "imageIdentifier"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"a3": {"n": json.Number("1")},
		"b1": {"s": "x"},
	}
	for _, img := range page.Images {
		w := want[img.Identifier]
		if w == nil {
			w = map[string]any{}
		}
		if img.Metadata == nil || !reflect.DeepEqual(img.Metadata, w) {
			t.Fatalf("%s metadata = %#v, want %#v", img.Identifier, img.Metadata, w)
		}
	}
}

func testLastModified(t *testing.T, db *storage.DB) {
	lm, err := db.LastModified(ctx(t), nil)
	if err != nil || !lm.IsZero() {
		t.Fatalf("LastModified(empty) = %v, %v; want zero", lm, err)
	}
	users, err := db.Users(ctx(t))
	if err != nil || users == nil || len(users) != 0 {
		t.Fatalf("Users(empty) = %#v, %v", users, err)
	}
	listFixture(t, db)
	for _, c := range []struct {
		users []string
		want  time.Time
	}{
		{nil, base.Add(5 * time.Minute)},
		{[]string{"bob"}, base.Add(4 * time.Minute)},
		{[]string{"bob", "carol"}, base.Add(4 * time.Minute)},
		{[]string{"nobody"}, time.Time{}},
	} {
		lm, err := db.LastModified(ctx(t), c.users)
		if err != nil || !lm.Equal(c.want) {
			t.Fatalf("LastModified(%q) = %v, %v; want %v", c.users, lm, err, c.want)
		}
	}
	// Metadata changes bump Updated and so LastModified.
	before := time.Now().UTC().Truncate(time.Second)
	if err := db.SetMetadata(ctx(t), "bob", "b1", map[string]any{"x": true}); err != nil {
		t.Fatal(err)
	}
	lm, err = db.LastModified(ctx(t), []string{"bob"})
	if err != nil || lm.Before(before) {
		t.Fatalf("LastModified after SetMetadata = %v, %v; want >= %v", lm, err, before)
	}
	users, err = db.Users(ctx(t))
	if err != nil || !reflect.DeepEqual(users, []string{"alice", "bob", "carol"}) {
		t.Fatalf("Users = %q, %v", users, err)
	}
	stats, err := db.UserStats(ctx(t))
	wantStats := []storage.UserStats{
		{User: "alice", NumImages: 3, NumBytes: 600 + 400 + 100},
		{User: "bob", NumImages: 2, NumBytes: 500 + 200},
		{User: "carol", NumImages: 1, NumBytes: 300},
	}
	if err != nil || !reflect.DeepEqual(stats, wantStats) {
		t.Fatalf("UserStats = %+v, %v; want %+v", stats, err, wantStats)
	}
}

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
	// Missing image.
	_, err = db.Metadata(ctx(t), "alice", "nope")
	wantErr(t, "Metadata(missing)", err, storage.ErrNotExist)
	wantErr(t, "SetMetadata(missing)", db.SetMetadata(ctx(t), "alice", "nope", map[string]any{}), storage.ErrNotExist)
	_, err = db.MergeMetadata(ctx(t), "alice", "nope", map[string]any{})
	wantErr(t, "MergeMetadata(missing)", err, storage.ErrNotExist)
	wantErr(t, "DeleteMetadata(missing)", db.DeleteMetadata(ctx(t), "alice", "nope"), storage.ErrNotExist)
	if _, err := db.Image(ctx(t), "alice", "nope"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("metadata write created an image: %v", err)
	}
	// Concurrent merges of different keys all land.
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
	md, err = db.Metadata(ctx(t), "alice", "abc")
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
	wantErr(t, "InsertShortURL(taken id)", db.InsertShortURL(ctx(t), storage.ShortURL{ID: "aaaaaaa", User: "alice", Image: "def", Query: "x"}), storage.ErrExist)
	wantErr(t, "InsertShortURL(same target)", db.InsertShortURL(ctx(t), storage.ShortURL{ID: "eeeeeee", User: "alice", Image: "abc", Extension: "png", Query: "t[]=thumbnail"}), storage.ErrExist)
	wantErr(t, "InsertShortURL(missing image)", db.InsertShortURL(ctx(t), storage.ShortURL{ID: "fffffff", User: "alice", Image: "nope"}), storage.ErrNotExist)
	wantErr(t, "InsertShortURL(empty id)", db.InsertShortURL(ctx(t), storage.ShortURL{User: "alice", Image: "abc"}), storage.ErrInvalid)
	_, err := db.ShortURL(ctx(t), "zzzzzzz")
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
	if err := db.DeleteShortURLs(ctx(t), "alice", "abc"); err != nil {
		t.Fatalf("DeleteShortURLs(none left) = %v", err)
	}
	// The freed target can get a new short URL.
	if err := db.InsertShortURL(ctx(t), storage.ShortURL{ID: "ggggggg", User: "alice", Image: "abc", Extension: "png", Query: "t[]=thumbnail"}); err != nil {
		t.Fatal(err)
	}
}

func testKeys(t *testing.T, db *storage.DB) {
	keys, err := db.Keys(ctx(t))
	if err != nil || len(keys) != 0 {
		t.Fatalf("Keys(empty) = %v, %v", keys, err)
	}
	created, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv"})
	if err != nil || !created {
		t.Fatalf("PutKey(new) = %v, %v", created, err)
	}
	created, err = db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv2"})
	if err != nil || created {
		t.Fatalf("PutKey(existing) = %v, %v", created, err)
	}
	created, err = db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv2"})
	if err != nil || created {
		t.Fatalf("PutKey(unchanged) = %v, %v", created, err)
	}
	k, err := db.Key(ctx(t), "pub")
	if err != nil || k != (storage.Key{PublicKey: "pub", PrivateKey: "priv2"}) {
		t.Fatalf("Key = %+v, %v", k, err)
	}
	raw, err := db.RawPrivateKey(ctx(t), "pub")
	if err != nil || raw != "priv2" {
		t.Fatalf("RawPrivateKey without secret = %q, %v; want stored as given", raw, err)
	}
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "another", PrivateKey: "x"}); err != nil {
		t.Fatal(err)
	}
	keys, err = db.Keys(ctx(t))
	want := []storage.Key{{PublicKey: "another", PrivateKey: "x"}, {PublicKey: "pub", PrivateKey: "priv2"}}
	if err != nil || !reflect.DeepEqual(keys, want) {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	_, err = db.PutKey(ctx(t), storage.Key{PublicKey: "", PrivateKey: "x"})
	wantErr(t, "PutKey(empty public)", err, storage.ErrInvalid)
	_, err = db.PutKey(ctx(t), storage.Key{PublicKey: "p", PrivateKey: ""})
	wantErr(t, "PutKey(empty private)", err, storage.ErrInvalid)
	if err := db.DeleteKey(ctx(t), "pub"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Key(ctx(t), "pub")
	wantErr(t, "Key(deleted)", err, storage.ErrNotExist)
	wantErr(t, "DeleteKey(deleted)", db.DeleteKey(ctx(t), "pub"), storage.ErrNotExist)
	_, err = db.RawPrivateKey(ctx(t), "pub")
	wantErr(t, "RawPrivateKey(deleted)", err, storage.ErrNotExist)
}

func testGroups(t *testing.T, db *storage.DB) {
	groups, total, err := db.Groups(ctx(t), 1, 10)
	if err != nil || len(groups) != 0 || total != 0 {
		t.Fatalf("Groups(empty) = %v, %d, %v", groups, total, err)
	}
	created, err := db.PutGroup(ctx(t), storage.Group{Name: "g", Resources: []string{"image.get", "images.get"}})
	if err != nil || !created {
		t.Fatalf("PutGroup(new) = %v, %v", created, err)
	}
	created, err = db.PutGroup(ctx(t), storage.Group{Name: "g", Resources: []string{"user.get"}})
	if err != nil || created {
		t.Fatalf("PutGroup(existing) = %v, %v", created, err)
	}
	g, err := db.Group(ctx(t), "g")
	if err != nil || !reflect.DeepEqual(g, storage.Group{Name: "g", Resources: []string{"user.get"}}) {
		t.Fatalf("Group = %+v, %v", g, err)
	}
	if _, err := db.PutGroup(ctx(t), storage.Group{Name: "empty"}); err != nil {
		t.Fatal(err)
	}
	g, err = db.Group(ctx(t), "empty")
	if err != nil || g.Resources == nil || len(g.Resources) != 0 {
		t.Fatalf("Group(empty) = %#v, %v; want empty non-nil resources", g, err)
	}
	for _, n := range []string{"c", "a", "b"} {
		if _, err := db.PutGroup(ctx(t), storage.Group{Name: n, Resources: []string{n}}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(gs []storage.Group) []string {
		out := []string{}
		for _, g := range gs {
			out = append(out, g.Name)
		}
		return out
	}
	for _, c := range []struct {
		page, limit int
		want        []string
	}{
		{1, 0, []string{"a", "b", "c", "empty", "g"}},
		{0, 2, []string{"a", "b"}},
		{2, 2, []string{"c", "empty"}},
		{3, 2, []string{"g"}},
		{4, 2, []string{}},
	} {
		groups, total, err := db.Groups(ctx(t), c.page, c.limit)
		if err != nil || total != 5 || !reflect.DeepEqual(names(groups), c.want) {
			t.Fatalf("Groups(%d, %d) = %q, %d, %v; want %q, 5", c.page, c.limit, names(groups), total, err, c.want)
		}
	}
	_, _, err = db.Groups(ctx(t), -1, 0)
	wantErr(t, "Groups(-1)", err, storage.ErrInvalid)
	_, err = db.PutGroup(ctx(t), storage.Group{})
	wantErr(t, "PutGroup(no name)", err, storage.ErrInvalid)
	if err := db.DeleteGroup(ctx(t), "g"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Group(ctx(t), "g")
	wantErr(t, "Group(deleted)", err, storage.ErrNotExist)
	wantErr(t, "DeleteGroup(deleted)", db.DeleteGroup(ctx(t), "g"), storage.ErrNotExist)
}

func testRules(t *testing.T, db *storage.DB) {
	_, err := db.Rules(ctx(t), "pub")
	wantErr(t, "Rules(missing key)", err, storage.ErrNotExist)
	_, err = db.AddRules(ctx(t), "pub", []storage.Rule{{Resources: []string{"a"}, Users: []string{"*"}}})
	wantErr(t, "AddRules(missing key)", err, storage.ErrNotExist)
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: "priv"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutGroup(ctx(t), storage.Group{Name: "readers", Resources: []string{"image.get"}}); err != nil {
		t.Fatal(err)
	}
	rules, err := db.Rules(ctx(t), "pub")
	if err != nil || rules == nil || len(rules) != 0 {
		t.Fatalf("Rules(no rules) = %#v, %v", rules, err)
	}
	added, err := db.AddRules(ctx(t), "pub", []storage.Rule{
		{Resources: []string{"images.get", "images.post"}, Users: []string{"alice", "bob"}},
		{Group: "readers", Users: []string{"*"}},
	})
	if err != nil || len(added) != 2 {
		t.Fatalf("AddRules = %+v, %v", added, err)
	}
	if added[0].ID == 0 || added[1].ID <= added[0].ID {
		t.Fatalf("rule IDs %d, %d; want increasing non-zero", added[0].ID, added[1].ID)
	}
	more, err := db.AddRules(ctx(t), "pub", []storage.Rule{{Resources: []string{"user.get"}, Users: []string{"carol"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Rule{
		{ID: added[0].ID, PublicKey: "pub", Resources: []string{"images.get", "images.post"}, Users: []string{"alice", "bob"}},
		{ID: added[1].ID, PublicKey: "pub", Group: "readers", Users: []string{"*"}},
		{ID: more[0].ID, PublicKey: "pub", Resources: []string{"user.get"}, Users: []string{"carol"}},
	}
	if !reflect.DeepEqual(append(added, more...), want) {
		t.Fatalf("AddRules returned %+v\nwant %+v", append(added, more...), want)
	}
	rules, err = db.Rules(ctx(t), "pub")
	if err != nil || !reflect.DeepEqual(rules, want) {
		t.Fatalf("Rules = %+v, %v\nwant %+v", rules, err, want)
	}
	r, err := db.Rule(ctx(t), "pub", want[1].ID)
	if err != nil || !reflect.DeepEqual(r, want[1]) {
		t.Fatalf("Rule = %+v, %v", r, err)
	}
	// Invalid rules add nothing, even when others in the batch are valid.
	for _, bad := range [][]storage.Rule{
		{{Resources: []string{"a"}, Users: []string{"*"}}, {Resources: []string{"a"}}},
		{{Users: []string{"*"}}},
		{{Group: "readers", Resources: []string{"a"}, Users: []string{"*"}}},
		{{Resources: []string{"a"}, Users: []string{"*"}}, {Group: "readers", Users: nil}},
	} {
		_, err := db.AddRules(ctx(t), "pub", bad)
		wantErr(t, fmt.Sprintf("AddRules(%+v)", bad), err, storage.ErrInvalid)
	}
	rules, err = db.Rules(ctx(t), "pub")
	if err != nil || len(rules) != 3 {
		t.Fatalf("after invalid AddRules, %d rules, %v; want 3", len(rules), err)
	}
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "other", PrivateKey: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err = db.Rule(ctx(t), "other", want[0].ID)
	wantErr(t, "Rule(other key)", err, storage.ErrNotExist)
	wantErr(t, "DeleteRule(other key)", db.DeleteRule(ctx(t), "other", want[0].ID), storage.ErrNotExist)
	if err := db.DeleteRule(ctx(t), "pub", want[0].ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "DeleteRule(again)", db.DeleteRule(ctx(t), "pub", want[0].ID), storage.ErrNotExist)
	_, err = db.Rule(ctx(t), "pub", want[0].ID)
	wantErr(t, "Rule(deleted)", err, storage.ErrNotExist)
	rules, err = db.Rules(ctx(t), "pub")
	if err != nil || !reflect.DeepEqual(rules, want[1:]) {
		t.Fatalf("Rules after delete = %+v, %v", rules, err)
	}
}

func testRulesCascade(t *testing.T, db *storage.DB) {
	for _, k := range []string{"k1", "k2"} {
		if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: k, PrivateKey: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"g1", "g2"} {
		if _, err := db.PutGroup(ctx(t), storage.Group{Name: g, Resources: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"k1", "k2"} {
		_, err := db.AddRules(ctx(t), k, []storage.Rule{
			{Group: "g1", Users: []string{"*"}},
			{Group: "g2", Users: []string{"*"}},
			{Resources: []string{"r"}, Users: []string{"u"}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	count := func(k string) int {
		t.Helper()
		rules, err := db.Rules(ctx(t), k)
		if err != nil {
			t.Fatal(err)
		}
		return len(rules)
	}
	if err := db.DeleteGroup(ctx(t), "g1"); err != nil {
		t.Fatal(err)
	}
	if count("k1") != 2 || count("k2") != 2 {
		t.Fatalf("after DeleteGroup: %d, %d rules; want 2, 2", count("k1"), count("k2"))
	}
	rules, _ := db.Rules(ctx(t), "k1")
	for _, r := range rules {
		if r.Group == "g1" {
			t.Fatalf("rule %+v survived its group", r)
		}
	}
	if err := db.DeleteKey(ctx(t), "k1"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Rules(ctx(t), "k1")
	wantErr(t, "Rules(deleted key)", err, storage.ErrNotExist)
	if count("k2") != 2 {
		t.Fatalf("other key lost rules")
	}
	// A re-created key starts with no rules.
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "k1", PrivateKey: "p"}); err != nil {
		t.Fatal(err)
	}
	if n := count("k1"); n != 0 {
		t.Fatalf("re-created key has %d rules", n)
	}
}

func testKeyEncryption(t *testing.T, openSecret func(t *testing.T, secret []byte) (*storage.DB, func(secret []byte) *storage.DB)) {
	db, reopen := openSecret(t, []byte("correct horse battery staple"))
	const priv = "my-very-private-key"
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	raw, err := db.RawPrivateKey(ctx(t), "pub")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, priv) || !strings.HasPrefix(raw, "v1:") {
		t.Fatalf("stored private key %q is not encrypted", raw)
	}
	k, err := db.Key(ctx(t), "pub")
	if err != nil || k.PrivateKey != priv {
		t.Fatalf("Key = %+v, %v", k, err)
	}
	keys, err := db.Keys(ctx(t))
	if err != nil || len(keys) != 1 || keys[0].PrivateKey != priv {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	// Same value twice gives a different ciphertext (random nonce).
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "pub", PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	raw2, err := db.RawPrivateKey(ctx(t), "pub")
	if err != nil || raw2 == raw {
		t.Fatalf("re-encrypted value %q equals the first, %v", raw2, err)
	}
	if reopen == nil {
		return
	}
	wrong := reopen([]byte("wrong secret"))
	_, err = wrong.Key(ctx(t), "pub")
	wantErr(t, "Key with wrong secret", err, storage.ErrDecrypt)
	_, err = wrong.Keys(ctx(t))
	wantErr(t, "Keys with wrong secret", err, storage.ErrDecrypt)
	none := reopen(nil)
	_, err = none.Key(ctx(t), "pub")
	wantErr(t, "Key without secret", err, storage.ErrDecrypt)
	right := reopen([]byte("correct horse battery staple"))
	k, err = right.Key(ctx(t), "pub")
	if err != nil || k.PrivateKey != priv {
		t.Fatalf("Key after reopen = %+v, %v", k, err)
	}
}

// testListHits checks the hit count of user-filtered listings (kept in a
// per-user count) through inserts, repeated inserts, concurrent inserts of
// one image and deletes.
func testListHits(t *testing.T, db *storage.DB) {
	hits := func(users ...string) int {
		t.Helper()
		page, err := db.Images(ctx(t), storage.Query{Users: users, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return page.Hits
	}
	mustInsert(t, db, image("alice", "a1", base), image("alice", "a2", base), image("bob", "b1", base))
	if created, err := db.InsertImage(ctx(t), image("alice", "a1", base)); err != nil || created {
		t.Fatalf("second insert = %v, %v", created, err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := db.InsertImage(ctx(t), image("alice", "a3", base)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := db.DeleteImage(ctx(t), "alice", "a2"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteImage(ctx(t), "alice", "a2"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("second delete = %v; want ErrNotExist", err)
	}
	for _, c := range []struct {
		users []string
		want  int
	}{{[]string{"alice"}, 2}, {[]string{"bob"}, 1}, {[]string{"alice", "bob"}, 3}, {nil, 3}, {[]string{"carol"}, 0}} {
		if got := hits(c.users...); got != c.want {
			t.Errorf("Hits for %v = %d, want %d", c.users, got, c.want)
		}
	}
}
