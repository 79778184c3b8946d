package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// CheckOptions tunes Check.
type CheckOptions struct {
	// Grace is the age under which a blob without a row is not reported:
	// it may belong to an upload in flight (default 1h).
	Grace time.Duration
	// Repair queues the deletion of orphan blobs, removes variant records
	// whose image or blob is gone, recounts the users' usage rows that
	// disagree with their images, and drains the queue. Image records
	// whose blob is missing are only reported: their bytes must come from
	// a backup, or the image be deleted.
	Repair bool
	// Progress, when set, is called as each phase advances with the number
	// of rows or blobs it has read so far, and the phase's total when it is
	// known beforehand (records are counted first; blobs are not: 0).
	Progress func(phase string, done, total int64)
	// Uploads, when set, is where resumable uploads keep their parts (the
	// blob store or a staging folder): expired uploads and orphaned parts
	// are reported, and deleted by Repair (Resumable.Sweep).
	Uploads *Resumable
	// Examples is how many findings of each kind the report lists (default
	// 20); all are counted.
	Examples int
}

// Findings counts one kind of inconsistency, with a few examples.
type Findings struct {
	Count    int64    `json:"count"`
	Examples []string `json:"examples,omitempty"`
	// Repaired counts what Repair fixed.
	Repaired int64 `json:"repaired"`
}

// CheckReport is what Check found.
type CheckReport struct {
	Images       int64 `json:"images"`
	ImageBlobs   int64 `json:"imageBlobs"`
	Variants     int64 `json:"variants"`
	VariantBlobs int64 `json:"variantBlobs"`
	// ImagesWithoutBlob are image records whose blob is missing: images
	// the API lists but cannot serve.
	ImagesWithoutBlob Findings `json:"imagesWithoutBlob"`
	// OrphanImageBlobs are image blobs no record names, older than Grace
	// and not queued.
	OrphanImageBlobs Findings `json:"orphanImageBlobs"`
	// VariantsOfDeletedImages are variant records whose image is gone.
	VariantsOfDeletedImages Findings `json:"variantsOfDeletedImages"`
	// VariantsWithoutBlob are variant records whose blob is missing (a
	// cache miss, but counted against cache.maxBytes).
	VariantsWithoutBlob Findings `json:"variantsWithoutBlob"`
	// OrphanVariantBlobs are variant blobs no record names, older than
	// Grace and not queued (not counted against cache.maxBytes).
	OrphanVariantBlobs Findings `json:"orphanVariantBlobs"`
	// Variations counts stored variation records, VariationBlobs their
	// blobs; VariationsWithoutBlob and OrphanVariationBlobs are as for
	// variants (fsck_variations.go).
	Variations            int64    `json:"variations"`
	VariationBlobs        int64    `json:"variationBlobs"`
	VariationsWithoutBlob Findings `json:"variationsWithoutBlob"`
	OrphanVariationBlobs  Findings `json:"orphanVariationBlobs"`
	// VariantRecordBytes is the cache's size as its records count it;
	// VariantBlobBytes the size of the variant blobs in the store.
	VariantRecordBytes int64 `json:"variantRecordBytes"`
	VariantBlobBytes   int64 `json:"variantBlobBytes"`
	// ErasedUsers counts the users checked for what their erasure left
	// (fsck_erasures.go); ErasedUserLeftovers are the rows (one finding
	// per table, "<user>: <rows> <kind>") and blobs left of them.
	ErasedUsers         int64    `json:"erasedUsers"`
	ErasedUserLeftovers Findings `json:"erasedUserLeftovers"`
	// Users counts the users' rows of image_counts, what the quotas are
	// checked against; UsageMismatches are those that disagree with the
	// user's images, or users with images and no row (fsck_usage.go).
	Users           int64    `json:"users"`
	UsageMismatches Findings `json:"usageMismatches"`
	// ExpiredUploads are resumable uploads past their expiry;
	// OrphanUploadParts objects under uploads/ of no upload (parts whose
	// upload is gone, what a killed server left of a part it was writing).
	ExpiredUploads    Findings `json:"expiredUploads"`
	OrphanUploadParts Findings `json:"orphanUploadParts"`
	// FilterVersions counts the versions of filters deployed through the
	// API, FilterBundles the blobs under filters/;
	// FilterVersionsWithoutBundle are versions whose bundle is missing
	// ("<name> <version>"), OrphanFilterBundles bundles no version names
	// (fsck_filters.go).
	FilterVersions              int64    `json:"filterVersions"`
	FilterBundles               int64    `json:"filterBundles"`
	FilterVersionsWithoutBundle Findings `json:"filterVersionsWithoutBundle"`
	OrphanFilterBundles         Findings `json:"orphanFilterBundles"`
	// Queue is blob_queue after the check (and the repair's drain).
	Queue QueueStats `json:"queue"`
}

func (r *CheckReport) findings() []*Findings {
	return []*Findings{&r.ImagesWithoutBlob, &r.OrphanImageBlobs, &r.VariantsOfDeletedImages,
		&r.VariantsWithoutBlob, &r.OrphanVariantBlobs, &r.VariationsWithoutBlob, &r.OrphanVariationBlobs,
		&r.ErasedUserLeftovers, &r.UsageMismatches, &r.ExpiredUploads, &r.OrphanUploadParts,
		&r.FilterVersionsWithoutBundle, &r.OrphanFilterBundles}
}

// Clean reports whether the check found nothing to fix. (The cache's
// recorded and stored bytes may still differ by blobs in flight or
// queued.)
func (r *CheckReport) Clean() bool { return r.Unrepaired() == 0 && r.Repaired() == 0 }

// Repaired counts what the repair fixed.
func (r *CheckReport) Repaired() (n int64) {
	for _, f := range r.findings() {
		n += f.Repaired
	}
	return n
}

// Unrepaired counts the findings left as they were.
func (r *CheckReport) Unrepaired() (n int64) {
	for _, f := range r.findings() {
		n += f.Count - f.Repaired
	}
	return n
}

func (f *Findings) add(max int, example string) {
	f.Count++
	if len(f.Examples) < max {
		f.Examples = append(f.Examples, example)
	}
}

// checkPage is how many rows or blobs Check holds at once.
const checkPage = 500

// Check compares the database with the blob store, a page at a time (its
// memory does not grow with the number of images), and with
// opts.Repair fixes what is safe to fix. It works on every SQL backend and
// blob store.
func Check(ctx context.Context, db *DB, blobs *Blobs, opts CheckOptions) (*CheckReport, error) {
	if opts.Grace <= 0 {
		opts.Grace = time.Hour
	}
	if opts.Examples <= 0 {
		opts.Examples = 20
	}
	if opts.Progress == nil {
		opts.Progress = func(string, int64, int64) {}
	}
	c := &checker{db: db, blobs: blobs, opts: opts, r: &CheckReport{}, cutoff: time.Now().Add(-opts.Grace)}
	for _, phase := range []func(context.Context) error{
		c.imageRows, c.imageBlobs, c.variantRows, c.variantBlobs, c.variationRows, c.variationBlobs,
		c.erasedUsers, c.usageRows, c.uploads, c.filters,
	} {
		if err := phase(ctx); err != nil {
			return c.r, err
		}
	}
	if opts.Repair {
		coll, err := NewCollector(db, blobs, CollectorConfig{})
		if err != nil {
			return c.r, err
		}
		if _, err := coll.Drain(ctx); err != nil {
			return c.r, err
		}
	}
	var err error
	c.r.Queue, err = db.QueueStats(ctx)
	return c.r, err
}

type checker struct {
	db     *DB
	blobs  *Blobs
	opts   CheckOptions
	r      *CheckReport
	cutoff time.Time
}

// count is the number of rows in a table, for progress.
func (c *checker) count(ctx context.Context, model any) int64 {
	n, err := c.db.bun.NewSelect().Model(model).Count(ctx)
	if err != nil {
		return 0 // progress without a total; the phase itself reports errors
	}
	return int64(n)
}

// missing returns which of keys have no blob, asking the store 16 at a
// time.
func (c *checker) missing(ctx context.Context, keys []string) ([]bool, error) {
	gone := make([]bool, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, _, err := c.blobs.Attributes(ctx, k)
			if errors.Is(err, ErrNotExist) {
				gone[i] = true
			} else {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return gone, errors.Join(errs...)
}

// parsedKey is a blob key split into its parts.
type parsedKey struct{ user, id, token, hash string }

// parseKey splits images/<user>/<id>[.<token>] (hash empty),
// variants/<user>/<id>[.<token>]/<hash> or
// variations/<user>/<id>[.<token>]/<width>.<ext> (hash the last part); ok
// is false for any other key.
func parseKey(key string) (p parsedKey, ok bool) {
	kind, rest, _ := strings.Cut(key, "/")
	user, rest, ok := strings.Cut(rest, "/")
	if !ok || user == "" {
		return p, false
	}
	p.user = user
	switch kind {
	case "images":
		p.id, p.token, _ = strings.Cut(rest, ".")
		return p, p.id != "" && !strings.Contains(rest, "/")
	case "variants", "variations":
		idTok, hash, ok := strings.Cut(rest, "/")
		if !ok || hash == "" {
			return p, false
		}
		p.id, p.token, _ = strings.Cut(idTok, ".")
		p.hash = hash
		return p, p.id != ""
	}
	return p, false
}

// orphans returns which of a page of blobs under prefix no row names:
// named reports, for one user and that user's identifiers in the page,
// the keys rows name. Blobs younger than the grace period, queued, or
// unparsable are not orphans.
func (c *checker) orphans(ctx context.Context, page []BlobInfo, named func(ctx context.Context, user string, ids []string) (map[string]bool, error)) ([]BlobInfo, error) {
	byUser := map[string][]string{}
	var old []BlobInfo
	for _, b := range page {
		p, ok := parseKey(b.Key)
		if !ok || b.ModTime.After(c.cutoff) {
			continue
		}
		old = append(old, b)
		byUser[p.user] = append(byUser[p.user], p.id)
	}
	if len(old) == 0 {
		return nil, nil
	}
	known := map[string]bool{}
	for user, ids := range byUser {
		got, err := named(ctx, user, ids)
		if err != nil {
			return nil, err
		}
		for k := range got {
			known[k] = true
		}
	}
	var unnamed []BlobInfo
	for _, b := range old {
		if !known[b.Key] {
			unnamed = append(unnamed, b)
		}
	}
	return c.notQueued(ctx, unnamed)
}

// notQueued returns the blobs of page that the blob queue does not hold
// (those it holds are the queue's to delete).
func (c *checker) notQueued(ctx context.Context, page []BlobInfo) ([]BlobInfo, error) {
	if len(page) == 0 {
		return nil, nil
	}
	keys := make([]string, len(page))
	for i, b := range page {
		keys[i] = b.Key
	}
	queued, err := c.db.Queued(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []BlobInfo
	for _, b := range page {
		if !queued[b.Key] {
			out = append(out, b)
		}
	}
	return out, nil
}

// listPages calls fn with the blobs under prefix, checkPage at a time.
func (c *checker) listPages(ctx context.Context, prefix string, fn func([]BlobInfo) error) error {
	page := make([]BlobInfo, 0, checkPage)
	err := c.blobs.List(ctx, prefix, func(b BlobInfo) error {
		page = append(page, b)
		if len(page) < checkPage {
			return nil
		}
		err := fn(page)
		page = page[:0]
		return err
	})
	if err != nil || len(page) == 0 {
		return err
	}
	return fn(page)
}

// orphanBlobs reports orphan blobs, and queues their deletion to repair.
func (c *checker) orphanBlobs(ctx context.Context, f *Findings, orphans []BlobInfo) error {
	keys := make([]string, len(orphans))
	for i, b := range orphans {
		f.add(c.opts.Examples, b.Key)
		keys[i] = b.Key
	}
	if !c.opts.Repair || len(keys) == 0 {
		return nil
	}
	if err := c.db.enqueue(ctx, c.db.bun, keys, false, time.Now()); err != nil {
		return fmt.Errorf("storage: repair: %w", err)
	}
	f.Repaired += int64(len(keys))
	return nil
}
