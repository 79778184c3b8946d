package storagetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// testProperties stores properties with an upload and apart from it, reads
// them back, lists them, and sees them go with their image.
func testProperties(t *testing.T, db *storage.DB) {
	p := storage.Properties{
		BlurHash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj", ThumbHash: "1QcSHQRnh493V4dIh4eXh1h4kJUI",
		AverageColor: "#7f6e5d", Palette: []string{"#112233", "#ffeedd"},
		PHash: 0xfedcba9876543210, HasPHash: true, Analyzed: base,
	}
	img := image("u", "a", base)
	img.Properties = &p
	mustInsert(t, db, img, image("u", "b", base.Add(time.Second)))
	t.Run("Read", func(t *testing.T) {
		got, err := db.Properties(ctx(t), "u", "a")
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("Properties = %+v, %v; want %+v", got, err, p)
		}
		if _, err := db.Properties(ctx(t), "u", "b"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("Properties of an unanalysed image: err %v, want ErrNotExist", err)
		}
	})
	t.Run("Set", func(t *testing.T) {
		q := storage.Properties{AverageColor: "#000000", Analyzed: base}
		if err := db.SetProperties(ctx(t), "u", "b", q); err != nil {
			t.Fatal(err)
		}
		if err := db.SetProperties(ctx(t), "u", "b", q); err != nil {
			t.Fatalf("SetProperties again: %v", err)
		}
		got, err := db.Properties(ctx(t), "u", "b")
		if err != nil || got.HasPHash || got.AverageColor != "#000000" || len(got.Palette) != 0 {
			t.Fatalf("Properties = %+v, %v", got, err)
		}
		if err := db.SetProperties(ctx(t), "u", "nope", q); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("SetProperties of a missing image: err %v, want ErrNotExist", err)
		}
	})
	t.Run("List", func(t *testing.T) {
		page, err := db.Images(ctx(t), storage.Query{Users: []string{"u"}, WithProperties: true, Sort: []storage.SortKey{{Field: "added"}}})
		if err != nil || len(page.Images) != 2 {
			t.Fatalf("Images = %+v, %v", page, err)
		}
		if got := page.Images[0].Properties; got == nil || got.BlurHash != p.BlurHash || got.PHash != p.PHash {
			t.Fatalf("listed properties of a = %+v", got)
		}
	})
	t.Run("DeleteCascades", func(t *testing.T) {
		if err := db.DeleteImage(ctx(t), "u", "a"); err != nil {
			t.Fatal(err)
		}
		mustInsert(t, db, image("u", "a", base))
		if _, err := db.Properties(ctx(t), "u", "a"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("properties outlived their image: err %v", err)
		}
	})
}

// testPendingAnalysis walks the images without properties page by page.
func testPendingAnalysis(t *testing.T, db *storage.DB) {
	mustInsert(t, db, image("u", "a", base), image("u", "b", base), image("u", "c", base), image("v", "a", base))
	if err := db.SetProperties(ctx(t), "u", "b", storage.Properties{Analyzed: base}); err != nil {
		t.Fatal(err)
	}
	walk := func(user string, stale time.Time) []storage.ImageRef {
		var got []storage.ImageRef
		var after storage.ImageRef
		for {
			imgs, err := db.PendingAnalysis(ctx(t), user, after, stale, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs) == 0 {
				return got
			}
			after = storage.ImageRef{User: imgs[0].User, Identifier: imgs[0].Identifier}
			got = append(got, after)
		}
	}
	ref := func(u, id string) storage.ImageRef { return storage.ImageRef{User: u, Identifier: id} }
	for _, c := range []struct {
		name  string
		user  string
		stale time.Time
		want  []storage.ImageRef
	}{
		{"Missing", "", time.Time{}, []storage.ImageRef{ref("u", "a"), ref("u", "c"), ref("v", "a")}},
		{"OneUser", "v", time.Time{}, []storage.ImageRef{ref("v", "a")}},
		{"Stale", "u", base.Add(time.Hour), []storage.ImageRef{ref("u", "a"), ref("u", "b"), ref("u", "c")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := walk(c.user, c.stale); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("pending = %v, want %v", got, c.want)
			}
		})
	}
}

// testSimilar lists images by Hamming distance of their perceptual hashes.
func testSimilar(t *testing.T, db *storage.DB) {
	hashes := map[string]uint64{
		"same": 0xffff0000ffff0000, "one": 0xffff0000ffff0001, "three": 0x7fff0000ffff0003,
		"far": 0x0000ffff0000ffff, "neg": 0xffff0000ffff0000 ^ 0x8000000000000000,
	}
	for id, h := range hashes {
		img := image("u", id, base)
		img.Properties = &storage.Properties{PHash: h, HasPHash: true}
		mustInsert(t, db, img)
	}
	other := image("v", "one", base)
	other.Properties = &storage.Properties{PHash: hashes["one"], HasPHash: true}
	mustInsert(t, db, other, image("u", "nohash", base))
	list := func(t *testing.T, q storage.Query) ([]string, []int, int) {
		t.Helper()
		page, err := db.Images(ctx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		var dists []int
		for _, img := range page.Images {
			ids = append(ids, img.Identifier)
			dists = append(dists, img.Distance)
		}
		return ids, dists, page.Hits
	}
	sim := func(d int) *storage.Similarity {
		return &storage.Similarity{Hash: hashes["same"], MaxDistance: d, Exclude: storage.ImageRef{User: "u", Identifier: "same"}}
	}
	for _, c := range []struct {
		name  string
		q     storage.Query
		ids   []string
		dists []int
		hits  int
	}{
		{"Nearest", storage.Query{Users: []string{"u"}, Similar: sim(3)}, []string{"neg", "one", "three"}, []int{1, 1, 3}, 3},
		{"Zero", storage.Query{Users: []string{"u"}, Similar: sim(0)}, nil, nil, 0},
		{"All", storage.Query{Users: []string{"u"}, Similar: sim(64)}, []string{"neg", "one", "three", "far"}, []int{1, 1, 3, 64}, 4},
		{"Paged", storage.Query{Users: []string{"u"}, Similar: sim(64), Page: 2, Limit: 2}, []string{"three", "far"}, []int{3, 64}, 4},
		{"Users", storage.Query{Users: []string{"u", "v"}, Similar: sim(1)}, []string{"neg", "one", "one"}, []int{1, 1, 1}, 3},
		{"Filtered", storage.Query{Users: []string{"u"}, Similar: sim(64), IDs: []string{"far", "one"}}, []string{"one", "far"}, []int{1, 64}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, dists, hits := list(t, c.q)
			if !reflect.DeepEqual(ids, c.ids) || !reflect.DeepEqual(dists, c.dists) || hits != c.hits {
				t.Fatalf("got %v %v hits %d, want %v %v hits %d", ids, dists, hits, c.ids, c.dists, c.hits)
			}
		})
	}
	t.Run("Invalid", func(t *testing.T) {
		_, err := db.Images(ctx(t), storage.Query{Similar: &storage.Similarity{MaxDistance: 65}})
		wantErr(t, "distance 65", err, storage.ErrInvalid)
	})
}

// testSimilarMany lists more near images than a lookup by hash takes at
// once (SQLite then reads the user's rows whole).
func testSimilarMany(t *testing.T, db *storage.DB) {
	const n = 520
	for i := range n {
		img := image("u", fmt.Sprintf("img%04d", i), base)
		img.Properties = &storage.Properties{PHash: uint64(i) << 20, HasPHash: true}
		mustInsert(t, db, img)
	}
	page, err := db.Images(ctx(t), storage.Query{Users: []string{"u"}, Limit: 3,
		Similar: &storage.Similarity{Hash: 1 << 20, MaxDistance: 64}})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(page)
	if page.Hits != n || len(got) != 3 || got[0] != "img0001" || page.Images[0].Distance != 0 || page.Images[1].Distance != 1 {
		t.Fatalf("hits %d, first %v (distances %d, %d)", page.Hits, got, page.Images[0].Distance, page.Images[1].Distance)
	}
}
