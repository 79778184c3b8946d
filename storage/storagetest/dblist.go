package storagetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

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
