package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// fakeBuild stands in for the engine (which storage may not import): it
// makes one small blob per scale of a 4000x3000 image, recording the
// scales it was asked for.
func fakeBuild(asked *[]int) storage.BuildFunc {
	return func(_ context.Context, src []byte, scales []int) ([]storage.BuiltVariation, error) {
		var out []storage.BuiltVariation
		for _, f := range scales {
			*asked = append(*asked, f)
			w := 4000 / f
			out = append(out, storage.BuiltVariation{Width: w, Height: w * 3 / 4, OrigWidth: 4000, OrigHeight: 3000,
				Ext: "tif", Data: fmt.Appendf(nil, "%s@%d", src, w)})
		}
		return out, nil
	}
}

func newBuilder(t *testing.T, db *storage.DB, blobs *storage.Blobs, build storage.BuildFunc) *storage.VariationBuilder {
	t.Helper()
	b, err := storage.NewVariationBuilder(db, blobs, storage.VariationsConfig{RetryMin: time.Hour}, build)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bigImage(user, id string) *storage.Image {
	img := image(user, id, base)
	img.Width, img.Height, img.Extension, img.Mime = 4000, 3000, "jpg", "image/jpeg"
	return img
}

// testVariations: committing a large image queues one job in its
// transaction (a small one none); a drain builds the default ladder under
// the image's keys, outside the user's counts, and finishes the job; a
// failed build keeps its job for a retry after the backoff; deleting the
// image drops the rows and queues the blobs, which the collector deletes.
func testVariations(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	var asked []int
	b := newBuilder(t, db, blobs, fakeBuild(&asked))
	big, small := bigImage("u", "big"), image("u", "small", base)
	upload(t, db, blobs, big, []byte("big"))
	upload(t, db, blobs, small, []byte("small"))
	before, err := db.UserStats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.Drain(ctx(t)); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want 1 job done", n, err)
	}
	if fmt.Sprint(asked) != "[2 4 8]" {
		t.Fatalf("scales built %v; want [2 4 8]", asked)
	}
	vs, err := db.Variations(ctx(t), *big)
	if err != nil || len(vs) != 3 || vs[0].Width != 500 || vs[2].Width != 2000 || vs[0].OrigWidth != 4000 {
		t.Fatalf("Variations = %+v, %v; want 500, 1000, 2000 of 4000", vs, err)
	}
	for _, v := range vs {
		wantBlob(t, blobs, v.Key, true)
		if v.Key != storage.VariationKey("u", "big", big.BlobToken, v.Width, "tif") {
			t.Fatalf("key %s is not the upload's", v.Key)
		}
	}
	wantQueue(t, db, 0)
	after, err := db.UserStats(ctx(t))
	if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("user stats %+v after building, %+v before (%v)", after, before, err)
	}
	if n, err := b.Drain(ctx(t)); err != nil || n != 0 {
		t.Fatalf("second Drain = %d, %v; want nothing", n, err)
	}
	if err := db.DeleteImage(ctx(t), "u", "big"); err != nil {
		t.Fatal(err)
	}
	if vs, err := db.Variations(ctx(t), *big); err != nil || len(vs) != 0 {
		t.Fatalf("Variations after delete = %+v, %v", vs, err)
	}
	drain(t, db, blobs)
	for _, v := range vs {
		wantBlob(t, blobs, v.Key, false)
	}
	wantQueue(t, db, 0)
}

// testVariationsFailures: a failing build keeps its job (not due again
// before the backoff) and leaves no blob behind; an image deleted while
// its variations are built leaves neither rows nor blobs; images without
// variations are what VariationCandidates lists.
func testVariationsFailures(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	boom := errors.New("boom")
	failing := newBuilder(t, db, blobs, func(context.Context, []byte, []int) ([]storage.BuiltVariation, error) {
		return nil, boom
	})
	img := bigImage("u", "a")
	upload(t, db, blobs, img, []byte("a"))
	if n, err := failing.Drain(ctx(t)); !errors.Is(err, boom) || n != 0 {
		t.Fatalf("failing Drain = %d, %v; want boom", n, err)
	}
	if n, err := failing.Drain(ctx(t)); err != nil || n != 0 {
		t.Fatalf("Drain before the backoff = %d, %v; want nothing taken", n, err)
	}
	cands, err := db.VariationCandidates(ctx(t), "u", "", "", 10)
	if err != nil || len(cands) != 1 || cands[0].Identifier != "a" {
		t.Fatalf("VariationCandidates = %+v, %v; want a", cands, err)
	}
	var asked []int
	racing := newBuilder(t, db, blobs, func(ctx context.Context, src []byte, widths []int) ([]storage.BuiltVariation, error) {
		if err := db.DeleteImage(ctx, "u", "a"); err != nil {
			return nil, err
		}
		return fakeBuild(&asked)(ctx, src, widths)
	})
	if r, err := racing.BuildImage(ctx(t), "u", "a"); err != nil || r.Variations != 0 {
		t.Fatalf("BuildImage of an image deleted meanwhile = %+v, %v; want nothing", r, err)
	}
	if vs, err := db.Variations(ctx(t), *img); err != nil || len(vs) != 0 {
		t.Fatalf("Variations = %+v, %v; want none", vs, err)
	}
	drain(t, db, blobs)
	for _, f := range asked {
		wantBlob(t, blobs, storage.VariationKey("u", "a", img.BlobToken, 4000/f, "tif"), false)
	}
	if len(asked) == 0 {
		t.Fatal("the racing build built nothing")
	}
	wantQueue(t, db, 0)
}

// testVariationsCheck: fsck counts stored variations, reports (and
// repairs, by dropping the image's variations and queuing them to be
// built again) one whose blob is lost, and a variation blob no record
// names.
func testVariationsCheck(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	var asked []int
	b := newBuilder(t, db, blobs, fakeBuild(&asked))
	img := bigImage("u", "c")
	upload(t, db, blobs, img, []byte("c"))
	if n, err := b.Drain(ctx(t)); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	r, err := storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Hour})
	if err != nil || r.Variations != 3 || r.VariationBlobs != 3 || !r.Clean() {
		t.Fatalf("Check = %+v, %v; want 3 variations, clean", r, err)
	}
	lost := storage.VariationKey("u", "c", img.BlobToken, 1000, "tif")
	if err := blobs.Delete(ctx(t), lost); err != nil {
		t.Fatal(err)
	}
	orphan := storage.VariationKey("u", "c", "feedface", 1000, "tif")
	if err := blobs.Put(ctx(t), orphan, []byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	r, err = storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Millisecond, Repair: true})
	if err != nil || r.VariationsWithoutBlob.Count != 1 || r.VariationsWithoutBlob.Repaired != 1 ||
		r.OrphanVariationBlobs.Count != 1 || r.OrphanVariationBlobs.Repaired != 1 {
		t.Fatalf("Check --repair = %+v, %v; want one lost and one orphan, repaired", r, err)
	}
	wantBlob(t, blobs, orphan, false)
	if vs, err := db.Variations(ctx(t), *img); err != nil || len(vs) != 0 {
		t.Fatalf("variations after the repair: %+v, %v", vs, err)
	}
	if n, err := b.Drain(ctx(t)); err != nil || n != 1 {
		t.Fatalf("Drain after the repair = %d, %v; want the job queued again", n, err)
	}
	if vs, err := db.Variations(ctx(t), *img); err != nil || len(vs) != 3 {
		t.Fatalf("variations rebuilt: %+v, %v", vs, err)
	}
}
