package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

func ptr(n int64) *int64 { return &n }

// tryUpload is upload without failing the test: reserve, write, commit;
// on a failed commit the reservation is released, as the API does.
func tryUpload(db *storage.DB, blobs *storage.Blobs, t *testing.T, img *storage.Image, data []byte) (bool, storage.Reservation, error) {
	img.BlobToken = storage.NewBlobToken()
	res, err := db.Reserve(ctx(t), img.Key())
	if err != nil {
		return false, res, err
	}
	if err := blobs.Put(ctx(t), res.Key, data); err != nil {
		return false, res, err
	}
	created, err := db.CommitImage(ctx(t), img, res, false)
	if err != nil {
		return false, res, errors.Join(err, db.Release(ctx(t), res))
	}
	return created, res, nil
}

// wantQuotaError checks that err is the *QuotaError of quota with usage
// and limit, and its public message.
func wantQuotaError(t *testing.T, what string, err error, quota string, usage, limit int64, message string) {
	t.Helper()
	var qe *storage.QuotaError
	if !errors.Is(err, storage.ErrQuotaExceeded) || !errors.As(err, &qe) {
		t.Fatalf("%s: error %v, want a quota error", what, err)
	}
	if qe.Quota != quota || qe.Usage != usage || qe.Limit != limit || qe.HTTPStatus() != 403 || qe.ErrorCode() != storage.QuotaErrorCode {
		t.Fatalf("%s: %+v (status %d, code %d); want quota %s, usage %d, limit %d, 403", what, qe, qe.HTTPStatus(), qe.ErrorCode(), quota, usage, limit)
	}
	if qe.PublicMessage() != message {
		t.Fatalf("%s: message %q, want %q", what, qe.PublicMessage(), message)
	}
}

func wantUsage(t *testing.T, db *storage.DB, user string, images, bytes int64) storage.UserQuota {
	t.Helper()
	uq, err := db.UserQuota(ctx(t), user)
	if err != nil {
		t.Fatal(err)
	}
	if uq.Usage.Images != images || uq.Usage.Bytes != bytes {
		t.Fatalf("usage of %s = %+v; want %d images, %d bytes", user, uq.Usage, images, bytes)
	}
	return uq
}

// testQuotaImages: the images quota lets exactly that many images in; the
// next commit writes nothing and says which quota, the usage and the
// limit; its blob goes with its released reservation; the pre-check says
// the same before any write; an image the user has is no new image; a
// delete makes room; other users are not touched.
func testQuotaImages(t *testing.T, db *storage.DB) {
	db.SetQuotas(storage.Quotas{Images: 3})
	blobs := memBlobs(t)
	if err := db.CheckQuota(ctx(t), "u", 1); err != nil {
		t.Fatalf("CheckQuota of a user with nothing: %v", err)
	}
	for i := range 3 {
		if created, _, err := tryUpload(db, blobs, t, image("u", fmt.Sprintf("i%d", i), base), []byte("x")); err != nil || !created {
			t.Fatalf("upload %d under the quota = %v, %v", i, created, err)
		}
	}
	msg := "Quota exceeded: 3 images of 3 (quotas.images)"
	wantQuotaError(t, "CheckQuota at the quota", db.CheckQuota(ctx(t), "u", 1), "images", 3, 3, msg)
	over := image("u", "over", base)
	created, res, err := tryUpload(db, blobs, t, over, []byte("over"))
	if created {
		t.Fatal("an upload past the quota was created")
	}
	wantQuotaError(t, "commit past the quota", err, "images", 3, 3, msg)
	if _, err := db.Image(ctx(t), "u", "over"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("the refused image has a row: %v", err)
	}
	drain(t, db, blobs)
	wantBlob(t, blobs, res.Key, false)
	wantQueue(t, db, 0)
	wantUsage(t, db, "u", 3, 600)

	// The same bytes again are the image the user has: no new image.
	if created, _, err := tryUpload(db, blobs, t, image("u", "i0", base), []byte("x")); err != nil || created {
		t.Fatalf("an image the user has, at the quota = %v, %v; want false, nil", created, err)
	}
	if created, _, err := tryUpload(db, blobs, t, image("other", "o", base), []byte("x")); err != nil || !created {
		t.Fatalf("another user's upload = %v, %v", created, err)
	}
	if err := db.DeleteImage(ctx(t), "u", "i1"); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckQuota(ctx(t), "u", 1); err != nil {
		t.Fatalf("CheckQuota after a delete: %v", err)
	}
	if created, _, err := tryUpload(db, blobs, t, image("u", "over", base), []byte("over")); err != nil || !created {
		t.Fatalf("upload after a delete made room = %v, %v", created, err)
	}
	wantUsage(t, db, "u", 3, 200+200+400)
}

// testQuotaBytes: the bytes quota counts the originals' sizes; an image
// that would pass it is refused naming the usage, the limit and its size.
func testQuotaBytes(t *testing.T, db *storage.DB) {
	db.SetQuotas(storage.Quotas{Bytes: 1000})
	blobs := memBlobs(t)
	a := image("u", "a", base)
	a.Size = 600
	if created, _, err := tryUpload(db, blobs, t, a, []byte("a")); err != nil || !created {
		t.Fatalf("600 of 1000 bytes = %v, %v", created, err)
	}
	b := image("u", "b", base)
	b.Size = 401
	_, _, err := tryUpload(db, blobs, t, b, []byte("b"))
	wantQuotaError(t, "401 more bytes", err, "bytes", 600, 1000,
		"Quota exceeded: 600 bytes of 1000 stored, and the image has 401 (quotas.bytes)")
	wantQuotaError(t, "CheckQuota of 401 bytes", db.CheckQuota(ctx(t), "u", 401), "bytes", 600, 1000,
		"Quota exceeded: 600 bytes of 1000 stored, and the image has 401 (quotas.bytes)")
	b.Size = 400
	if created, _, err := tryUpload(db, blobs, t, b, []byte("b")); err != nil || !created {
		t.Fatalf("exactly up to the quota = %v, %v", created, err)
	}
	wantUsage(t, db, "u", 2, 1000)
}

// testQuotaOverride: a user's own quotas replace the defaults field by
// field (nil keeps the default, 0 is unlimited), other users keep the
// defaults, an override that sets nothing is dropped, a negative one is
// invalid, and each change is audited and is an event.
func testQuotaOverride(t *testing.T, db *storage.DB) {
	defaults := storage.Quotas{Images: 2, Bytes: 5000, VariantsPerImage: 4}
	db.SetQuotas(defaults)
	db.SetEvents(true)
	blobs := memBlobs(t)
	uq, err := db.UserQuota(ctx(t), "u")
	if err != nil || uq.Limits != defaults || uq.Defaults != defaults || !uq.Override.IsZero() || !uq.Updated.IsZero() {
		t.Fatalf("UserQuota without an override = %+v, %v", uq, err)
	}
	before := time.Now().Add(-time.Second)
	uq, err = db.SetQuota(storage.WithActor(ctx(t), storage.Actor{Key: "admin"}), "u",
		storage.QuotaOverride{Images: ptr(1), VariantsPerImage: ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	if want := (storage.Quotas{Images: 1, Bytes: 5000, VariantsPerImage: 0}); uq.Limits != want || uq.Defaults != defaults {
		t.Fatalf("limits with an override = %+v (defaults %+v); want %+v", uq.Limits, uq.Defaults, want)
	}
	if uq.Override.Images == nil || *uq.Override.Images != 1 || uq.Override.Bytes != nil ||
		uq.Override.VariantsPerImage == nil || *uq.Override.VariantsPerImage != 0 || uq.Updated.Before(before) {
		t.Fatalf("override = %+v, updated %v", uq.Override, uq.Updated)
	}
	if created, _, err := tryUpload(db, blobs, t, image("u", "a", base), []byte("a")); err != nil || !created {
		t.Fatalf("first image under an override of 1 = %v, %v", created, err)
	}
	_, _, err = tryUpload(db, blobs, t, image("u", "b", base), []byte("b"))
	wantQuotaError(t, "second image under an override of 1", err, "images", 1, 1, "Quota exceeded: 1 images of 1 (quotas.images)")
	for _, id := range []string{"a", "b"} {
		if created, _, err := tryUpload(db, blobs, t, image("other", id, base), []byte(id)); err != nil || !created {
			t.Fatalf("another user under the default of 2 = %v, %v", created, err)
		}
	}
	uq, err = db.SetQuota(ctx(t), "u", storage.QuotaOverride{Images: ptr(0)})
	if err != nil || uq.Limits.Images != 0 || uq.Limits.VariantsPerImage != 4 {
		t.Fatalf("override images 0 (unlimited) = %+v, %v", uq.Limits, err)
	}
	for _, id := range []string{"b", "c"} {
		if created, _, err := tryUpload(db, blobs, t, image("u", id, base), []byte(id)); err != nil || !created {
			t.Fatalf("unlimited images = %v, %v", created, err)
		}
	}
	uq, err = db.SetQuota(ctx(t), "u", storage.QuotaOverride{})
	if err != nil || uq.Limits != defaults || !uq.Override.IsZero() || !uq.Updated.IsZero() {
		t.Fatalf("an override of nothing = %+v, %v; want the defaults", uq, err)
	}
	if _, err := db.SetQuota(ctx(t), "u", storage.QuotaOverride{Bytes: ptr(-1)}); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("a negative quota: %v, want ErrInvalid", err)
	}
	entries, _, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "quota."})
	if err != nil || len(entries) != 3 {
		t.Fatalf("audit of quota changes = %d entries, %v; want 3", len(entries), err)
	}
	first := entries[len(entries)-1]
	if first.Action != "quota.update" || first.Target != "u" || first.Actor != "admin" ||
		first.Detail["images"] != float64(1) || first.Detail["bytes"] != nil || first.Detail["variantsPerImage"] != float64(0) {
		t.Fatalf("first quota audit entry = %+v", first)
	}
	var quotaEvents int
	events, err := db.PendingEvents(ctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == "io.vitrine.quota.updated" {
			quotaEvents++
			if e.Subject != "users/u" || !strings.Contains(string(e.Data), `"user":"u"`) {
				t.Errorf("quota event %s %s", e.Subject, e.Data)
			}
		}
	}
	if quotaEvents != 3 {
		t.Fatalf("%d quota events, want 3", quotaEvents)
	}
}

// testQuotaConcurrent: uploads racing for the last places of the images
// and bytes quotas commit exactly as many images as the quotas allow;
// every other one is refused by its quota, none fails otherwise.
func testQuotaConcurrent(t *testing.T, db *storage.DB) {
	const writers = 16
	for _, c := range []struct {
		name   string
		quotas storage.Quotas
		size   int64
		want   int
	}{
		{"images", storage.Quotas{Images: 5}, 10, 5},
		{"bytes", storage.Quotas{Bytes: 35}, 10, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			db.SetQuotas(c.quotas)
			blobs := memBlobs(t)
			user := "race-" + c.name
			var (
				wg        sync.WaitGroup
				mu        sync.Mutex
				committed int
				errs      []error
			)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					img := image(user, fmt.Sprintf("img%02d", i), base)
					img.Size = c.size
					created, _, err := tryUpload(db, blobs, t, img, []byte("x"))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil && created:
						committed++
					case !errors.Is(err, storage.ErrQuotaExceeded):
						errs = append(errs, fmt.Errorf("upload %d: created %v, %w", i, created, err))
					}
				}()
			}
			wg.Wait()
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			if committed != c.want {
				t.Fatalf("%d of %d racing uploads committed; the quota allows %d", committed, writers, c.want)
			}
			wantUsage(t, db, user, int64(c.want), int64(c.want)*c.size)
			page, err := db.Images(ctx(t), storage.Query{Users: []string{user}})
			if err != nil || len(page.Images) != c.want {
				t.Fatalf("listing after the race = %d images, %v; want %d", len(page.Images), err, c.want)
			}
			drain(t, db, blobs)
			wantQueue(t, db, 0)
		})
	}
}

// testVariantQuota: an image caches at most the variants-per-image quota
// of distinct variants; the next is refused before its blob is written,
// the one already cached under a hash may be stored again, a user's
// override of 0 lifts the quota, and racing Puts store exactly the quota.
func testVariantQuota(t *testing.T, db *storage.DB) {
	db.SetQuotas(storage.Quotas{VariantsPerImage: 2})
	blobs := memBlobs(t)
	c := newCache(t, db, blobs, storage.CacheConfig{})
	img := storedImage(t, db, "u", "img")
	other := storedImage(t, db, "u", "other")
	put := func(img storage.Image, hash string) (bool, error) {
		return c.Put(ctx(t), img, storage.VariantName{Hash: hash, Chain: "resize:width=" + hash, Format: "png"}, []byte("variant "+hash))
	}
	for _, h := range []string{"h1", "h2"} {
		if stored, err := put(img, h); err != nil || !stored {
			t.Fatalf("Put %s under the quota = %v, %v", h, stored, err)
		}
	}
	stored, err := put(img, "h3")
	if stored {
		t.Fatal("a variant past the quota was stored")
	}
	wantQuotaError(t, "a third variant", err, "variantsPerImage", 2, 2,
		"Quota exceeded: 2 variants of 2 cached for the image (quotas.variantsPerImage)")
	wantBlob(t, blobs, storage.VariantKey("u", "img", img.BlobToken, "h3"), false)
	wantQueue(t, db, 0)
	if stored, err := put(img, "h1"); err != nil || !stored {
		t.Fatalf("Put of a variant the image has = %v, %v", stored, err)
	}
	if stored, err := put(other, "h3"); err != nil || !stored {
		t.Fatalf("another image's variant = %v, %v", stored, err)
	}
	uq := wantUsage(t, db, "u", 2, 2)
	if uq.Usage.Variants != 3 || uq.Usage.MaxVariantsPerImage != 2 || uq.Usage.VariantBytes != int64(3*len("variant h1")) {
		t.Fatalf("variant usage = %+v; want 3 variants, at most 2 per image, %d bytes", uq.Usage, 3*len("variant h1"))
	}
	if _, err := db.SetQuota(ctx(t), "u", storage.QuotaOverride{VariantsPerImage: ptr(0)}); err != nil {
		t.Fatal(err)
	}
	if stored, err := put(img, "h3"); err != nil || !stored {
		t.Fatalf("Put with the quota lifted = %v, %v", stored, err)
	}

	if _, err := db.SetQuota(ctx(t), "u", storage.QuotaOverride{VariantsPerImage: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	race := storedImage(t, db, "u", "race")
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		stores   int
		failures []error
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stored, err := put(race, fmt.Sprintf("r%d", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case stored && err == nil:
				stores++
			case !errors.Is(err, storage.ErrQuotaExceeded):
				failures = append(failures, fmt.Errorf("put r%d: %v, %w", i, stored, err))
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatal(errors.Join(failures...))
	}
	list, err := db.Variants(ctx(t), "u", "race")
	if err != nil {
		t.Fatal(err)
	}
	if stores != 3 || len(list) != 3 {
		t.Fatalf("racing Puts stored %d, the image has %d variants; the quota is 3", stores, len(list))
	}
	// What a refused Put wrote, if anything, is released and collected.
	drain(t, db, blobs)
	wantQueue(t, db, 0)
	n := 0
	for i := range 10 {
		if ok, err := blobs.Exists(ctx(t), storage.VariantKey("u", "race", race.BlobToken, fmt.Sprintf("r%d", i))); err != nil {
			t.Fatal(err)
		} else if ok {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d variant blobs of the raced image left, want 3", n)
	}
}

// testCheckUsage: Check finds a user whose usage row disagrees with the
// images and one with images and no row, reports them without repair and
// recounts them with it.
func testCheckUsage(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	for _, img := range []*storage.Image{image("a", "a1", base), image("a", "a2", base), image("b", "b1", base), image("c", "c1", base)} {
		upload(t, db, blobs, img, []byte("x"))
	}
	if _, err := db.SQL().ExecContext(ctx(t), "UPDATE image_counts SET images = images + 5 WHERE user_name = 'a'"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx(t), "DELETE FROM image_counts WHERE user_name = 'b'"); err != nil {
		t.Fatal(err)
	}
	r, err := storage.Check(ctx(t), db, blobs, storage.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a: 7 images, 400 bytes recorded; 2 images, 400 bytes stored",
		"b: 0 images, 0 bytes recorded; 1 images, 200 bytes stored"}
	if r.UsageMismatches.Count != 2 || r.UsageMismatches.Repaired != 0 || r.Users != 2 ||
		strings.Join(r.UsageMismatches.Examples, "\n") != strings.Join(want, "\n") {
		t.Fatalf("usage findings = %+v over %d users; want %q", r.UsageMismatches, r.Users, want)
	}
	if r.Clean() {
		t.Fatal("a report with usage findings is Clean")
	}
	wantUsage(t, db, "a", 7, 400) // a check without repair changes nothing
	r, err = storage.Check(ctx(t), db, blobs, storage.CheckOptions{Repair: true})
	if err != nil || r.UsageMismatches.Repaired != 2 {
		t.Fatalf("repair = %+v, %v", r.UsageMismatches, err)
	}
	wantUsage(t, db, "a", 2, 400)
	wantUsage(t, db, "b", 1, 200)
	wantUsage(t, db, "c", 1, 200)
	if r, err := storage.Check(ctx(t), db, blobs, storage.CheckOptions{}); err != nil || !r.Clean() || r.Users != 3 {
		t.Fatalf("after the repair: %+v, %v", r, err)
	}
}
