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
func fakeBuild(asked *[]int, src []byte, scales []int) []storage.BuiltVariation {
	var out []storage.BuiltVariation
	for _, f := range scales {
		*asked = append(*asked, f)
		w := 4000 / f
		out = append(out, storage.BuiltVariation{Width: w, Height: w * 3 / 4, OrigWidth: 4000, OrigHeight: 3000,
			Ext: "tif", Data: fmt.Appendf(nil, "%s@%d", src, w)})
	}
	return out
}

// fakeBuilder stands in for the variation worker's policy (package main):
// for a job's image it reads the record and the blob, builds the copies at
// 1/2, 1/4 and 1/8 (fakeBuild) and stores them; before storing it calls
// meanwhile, when set.
func fakeBuilder(db *storage.DB, blobs *storage.Blobs, asked *[]int, meanwhile func(ctx context.Context) error) func(ctx context.Context, user, id string) error {
	return func(ctx context.Context, user, id string) error {
		img, err := db.Image(ctx, user, id)
		if err != nil {
			return err
		}
		src, err := blobs.Get(ctx, img.Key())
		if err != nil {
			return err
		}
		built := fakeBuild(asked, src, []int{2, 4, 8})
		if meanwhile != nil {
			if err := meanwhile(ctx); err != nil {
				return err
			}
		}
		_, err = db.StoreVariations(ctx, blobs, img, built)
		return err
	}
}

// hourly is a pass over every due job whose failures wait an hour.
var hourly = storage.JobPass{RetryMin: time.Hour, RetryMax: time.Hour}

func bigImage(user, id string) *storage.Image {
	img := image(user, id, base)
	img.Width, img.Height, img.Extension, img.Mime = 4000, 3000, "jpg", "image/jpeg"
	return img
}

// testVariations: committing an image with variations queues one job in
// its transaction (without, none); a drain hands the job to the build,
// whose copies StoreVariations writes under the image's keys, outside the
// user's counts, and finishes the job; deleting the image drops the rows
// and queues the blobs, which the collector deletes.
func testVariations(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	var asked []int
	build := fakeBuilder(db, blobs, &asked, nil)
	big, small := bigImage("u", "big"), bigImage("u", "small")
	commitUpload(t, db, blobs, big, []byte("big"), true)
	commitUpload(t, db, blobs, small, []byte("small"), false)
	before, err := db.UserStats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	n, err := db.DrainVariationJobs(ctx(t), hourly, func(ctx context.Context, user, id string) error {
		jobs = append(jobs, user+"/"+id)
		return build(ctx, user, id)
	})
	if err != nil || n != 1 || fmt.Sprint(jobs) != "[u/big]" {
		t.Fatalf("DrainVariationJobs = %d, %v, jobs %v; want 1 job done, u/big", n, err, jobs)
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
	if n, err := db.DrainVariationJobs(ctx(t), hourly, build); err != nil || n != 0 {
		t.Fatalf("second drain = %d, %v; want nothing", n, err)
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
// before the backoff) and leaves no blob behind; a pass takes at most its
// limit of jobs; an image deleted while its variations are built leaves
// neither rows nor blobs; images without variations are what
// VariationCandidates lists; a pass without a backoff is refused.
func testVariationsFailures(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	boom := errors.New("boom")
	tries := 0
	failing := func(context.Context, string, string) error { tries++; return boom }
	img := bigImage("u", "a")
	commitUpload(t, db, blobs, img, []byte("a"), true)
	if n, err := db.DrainVariationJobs(ctx(t), hourly, failing); !errors.Is(err, boom) || n != 0 || tries != 1 {
		t.Fatalf("failing drain = %d, %v after %d tries; want boom after 1", n, err, tries)
	}
	if n, err := db.DrainVariationJobs(ctx(t), hourly, failing); err != nil || n != 0 || tries != 1 {
		t.Fatalf("drain before the backoff = %d, %v after %d tries; want nothing taken", n, err, tries)
	}
	if _, err := db.DrainVariationJobs(ctx(t), storage.JobPass{}, failing); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("drain without a backoff = %v; want ErrInvalid", err)
	}
	cands, err := db.VariationCandidates(ctx(t), "u", "", "", 10)
	if err != nil || len(cands) != 1 || cands[0].Identifier != "a" {
		t.Fatalf("VariationCandidates = %+v, %v; want a", cands, err)
	}
	var asked []int
	for _, id := range []string{"b", "c"} {
		commitUpload(t, db, blobs, bigImage("u", id), []byte(id), true)
	}
	one := hourly
	one.Limit = 1
	for _, want := range []int{1, 1, 0} {
		if n, err := db.DrainVariationJobs(ctx(t), one, fakeBuilder(db, blobs, &asked, nil)); err != nil || n != want {
			t.Fatalf("drain of one job = %d, %v; want %d", n, err, want)
		}
	}
	racing := fakeBuilder(db, blobs, &asked, func(ctx context.Context) error {
		return db.DeleteImage(ctx, "u", "a")
	})
	asked = nil
	if err := racing(ctx(t), "u", "a"); err != nil {
		t.Fatalf("building an image deleted meanwhile = %v; want no error", err)
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
	build := fakeBuilder(db, blobs, &asked, nil)
	img := bigImage("u", "c")
	commitUpload(t, db, blobs, img, []byte("c"), true)
	if n, err := db.DrainVariationJobs(ctx(t), hourly, build); err != nil || n != 1 {
		t.Fatalf("DrainVariationJobs = %d, %v", n, err)
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
	if n, err := db.DrainVariationJobs(ctx(t), hourly, build); err != nil || n != 1 {
		t.Fatalf("drain after the repair = %d, %v; want the job queued again", n, err)
	}
	if vs, err := db.Variations(ctx(t), *img); err != nil || len(vs) != 3 {
		t.Fatalf("variations rebuilt: %+v, %v", vs, err)
	}
}
