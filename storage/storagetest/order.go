package storagetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// testImageFrames checks that an image's frame count is stored and read
// back by Image and listings.
func testImageFrames(t *testing.T, db *storage.DB) {
	anim, still := image("alice", "anim", base), image("alice", "still", base)
	anim.Frames, still.Frames = 12, 1
	mustInsert(t, db, anim, still)
	if got, err := db.Image(ctx(t), "alice", "anim"); err != nil || got.Frames != 12 {
		t.Fatalf("Image(anim).Frames = %d, %v; want 12", got.Frames, err)
	}
	page, err := db.Images(ctx(t), storage.Query{Sort: []storage.SortKey{{Field: "imageIdentifier"}}})
	if err != nil || len(page.Images) != 2 || page.Images[0].Frames != 12 || page.Images[1].Frames != 1 {
		t.Fatalf("Images frames = %+v, %v", page.Images, err)
	}
}

// testListSameSecond checks that images added within one second list in
// the order they arrived (newest first by default), not by identifier.
func testListSameSecond(t *testing.T, db *storage.DB) {
	order := []string{"m", "z", "a", "q", "b"}
	for _, id := range order {
		mustInsert(t, db, image("dave", id, base))
	}
	mustInsert(t, db, image("dave", "older", base.Add(-time.Second)))
	newest := []string{"b", "q", "a", "z", "m", "older"}
	for _, c := range []struct {
		name string
		q    storage.Query
		want []string
	}{
		{"default", storage.Query{Users: []string{"dave"}}, newest},
		{"added desc", storage.Query{Sort: []storage.SortKey{{Field: "added", Desc: true}}}, newest},
		{"added asc", storage.Query{Sort: []storage.SortKey{{Field: "added"}}}, []string{"older", "m", "z", "a", "q", "b"}},
		{"paged", storage.Query{Users: []string{"dave"}, Limit: 2, Page: 2}, []string{"a", "z"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			page, err := db.Images(ctx(t), c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(page); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ids = %q, want %q", got, c.want)
			}
		})
	}
}
