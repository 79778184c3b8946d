package storagetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// checkFixture is what testCheck plants: one image of each state.
type checkFixture struct {
	good, lost                                   *storage.Image
	lostVariant, orphan, orphanVariant, inFlight string
}

// plantCheckFixture makes one inconsistency of each kind Check finds.
func plantCheckFixture(t *testing.T, db *storage.DB, blobs *storage.Blobs) checkFixture {
	cache := newCache(t, db, blobs, storage.CacheConfig{})
	good := image("u", "good", base)
	upload(t, db, blobs, good, []byte("good"))
	if _, err := cache.Put(ctx(t), *good, storage.VariantName{Hash: "h1"}, []byte("variant one")); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Put(ctx(t), *good, storage.VariantName{Hash: "lost"}, []byte("variant lost")); err != nil {
		t.Fatal(err)
	}
	lostVariant := storage.VariantKey("u", "good", good.BlobToken, "lost")
	if err := blobs.Delete(ctx(t), lostVariant); err != nil {
		t.Fatal(err)
	}
	lost := image("u", "lost", base)
	lost.BlobToken = storage.NewBlobToken()
	if _, err := db.InsertImage(ctx(t), lost); err != nil {
		t.Fatal(err)
	}
	orphan := storage.ImageKey("u", "orphan", storage.NewBlobToken())
	orphanVariant := storage.VariantKey("u", "good", good.BlobToken, "orphan")
	for _, k := range []string{orphan, orphanVariant} {
		if err := blobs.Put(ctx(t), k, []byte("orphan")); err != nil {
			t.Fatal(err)
		}
	}
	inFlight := storage.ImageKey("u", "inflight", storage.NewBlobToken())
	if _, err := db.Reserve(ctx(t), inFlight); err != nil {
		t.Fatal(err)
	}
	if err := blobs.Put(ctx(t), inFlight, []byte("in flight")); err != nil {
		t.Fatal(err)
	}
	return checkFixture{good: good, lost: lost, lostVariant: lostVariant, orphan: orphan, orphanVariant: orphanVariant, inFlight: inFlight}
}

// testCheck makes every inconsistency Check can find through the public
// API (a record whose blob is lost, blobs no record names, a variant whose
// blob is lost), checks that Check reports each and only those, that young
// and queued blobs are left alone, and that Repair leaves nothing but what
// it must only report.
func testCheck(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	f := plantCheckFixture(t, db, blobs)
	good, lost, lostVariant, orphan, orphanVariant, inFlight := f.good, f.lost, f.lostVariant, f.orphan, f.orphanVariant, f.inFlight
	time.Sleep(5 * time.Millisecond) // the blobs are older than the grace below

	// Within the grace period, no blob is an orphan.
	r, err := storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r.OrphanImageBlobs.Count != 0 || r.OrphanVariantBlobs.Count != 0 {
		t.Fatalf("young blobs reported as orphans: %+v", r)
	}
	r, err = storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		f    storage.Findings
		want []string
	}{
		{"images without blob", r.ImagesWithoutBlob, []string{lost.Key()}},
		{"orphan image blobs", r.OrphanImageBlobs, []string{orphan}},
		{"variants without blob", r.VariantsWithoutBlob, []string{lostVariant}},
		{"orphan variant blobs", r.OrphanVariantBlobs, []string{orphanVariant}},
		{"variants of deleted images", r.VariantsOfDeletedImages, nil},
	} {
		if c.f.Count != int64(len(c.want)) || !slices.Equal(c.f.Examples, c.want) {
			t.Errorf("%s = %+v; want %v", c.what, c.f, c.want)
		}
	}
	if r.Images != 2 || r.ImageBlobs != 3 || r.Variants != 2 || r.VariantBlobs != 2 {
		t.Errorf("counted %d images, %d image blobs, %d variants, %d variant blobs; want 2, 3, 2, 2",
			r.Images, r.ImageBlobs, r.Variants, r.VariantBlobs)
	}
	if r.Clean() {
		t.Error("a report with findings is Clean")
	}

	r, err = storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Millisecond, Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.OrphanImageBlobs.Repaired != 1 || r.VariantsWithoutBlob.Repaired != 1 || r.OrphanVariantBlobs.Repaired != 1 {
		t.Fatalf("repair: %+v", r)
	}
	wantBlob(t, blobs, orphan, false)
	wantBlob(t, blobs, orphanVariant, false)
	wantBlob(t, blobs, inFlight, true)
	wantBlob(t, blobs, good.Key(), true)
	r, err = storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.ImagesWithoutBlob = storage.Findings{} // reported, never repaired
	if !r.Clean() {
		t.Fatalf("after repair: %+v", r)
	}
}

// testCheckFilters: Check reports a filter version whose bundle is missing
// (and never repairs it) and a bundle no version names (which the repair
// deletes, but not while it is younger than the grace period), and leaves
// the versions' own bundles alone.
func testCheckFilters(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	good, lost, orphan := strings.Repeat("c", 64), strings.Repeat("d", 64), strings.Repeat("e", 64)
	for _, v := range []string{good, lost} {
		if err := db.AddFilterVersion(ctx(t), &storage.FilterVersion{Name: "fsck", Version: v, Manifest: json.RawMessage(`{}`), Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{good, orphan} {
		if err := blobs.Put(ctx(t), storage.FilterBlobKey(v), []byte("bundle")); err != nil {
			t.Fatal(err)
		}
	}
	check := func(grace time.Duration, repair bool) *storage.CheckReport {
		t.Helper()
		r, err := storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: grace, Repair: repair})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Within the grace period, no bundle is an orphan (a push under way).
	if r := check(time.Hour, true); r.OrphanFilterBundles.Count != 0 {
		t.Fatalf("young bundles reported as orphans: %+v", r.OrphanFilterBundles)
	}
	time.Sleep(5 * time.Millisecond) // the bundles are older than the grace below
	r := check(time.Millisecond, false)
	if r.FilterVersions != 2 || r.FilterBundles != 2 {
		t.Errorf("counted %d filter versions and %d bundles; want 2 and 2", r.FilterVersions, r.FilterBundles)
	}
	if f := r.FilterVersionsWithoutBundle; f.Count != 1 || !slices.Equal(f.Examples, []string{"fsck " + lost}) {
		t.Errorf("versions without bundle = %+v; want fsck %s", f, lost)
	}
	if f := r.OrphanFilterBundles; f.Count != 1 || !slices.Equal(f.Examples, []string{storage.FilterBlobKey(orphan)}) {
		t.Errorf("orphan bundles = %+v; want %s", f, storage.FilterBlobKey(orphan))
	}
	r = check(time.Millisecond, true)
	if r.OrphanFilterBundles.Repaired != 1 || r.FilterVersionsWithoutBundle.Repaired != 0 {
		t.Fatalf("repair: %+v", r)
	}
	wantBlob(t, blobs, storage.FilterBlobKey(orphan), false)
	wantBlob(t, blobs, storage.FilterBlobKey(good), true)
}
