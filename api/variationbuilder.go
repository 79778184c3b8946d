package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// A stored variation is a downscaled working copy of an image, kept in the
// blob store beside it (engine/README.md "Stored variations"). What storage keeps of
// them is its tables (variation_jobs, variations) and the transactions
// that write them; which images get them, at which scales, how they are
// built and how often, is here: VariationsConfig is the policy, the API
// asks it which uploads get a job (Deps.Variations), and the builder's
// worker takes the due jobs.

// VariationsConfig chooses which images get variations and at which
// scales, and how the builder runs. The zero value is the default: on,
// for images at least 1024 px wide or high, copies at 1/2, 1/4 and 1/8 of
// the size.
type VariationsConfig struct {
	// Enabled turns variations on (default true); false builds none and
	// makes the picker use the original always.
	Enabled *bool `yaml:"enabled"`
	// MinWidth: an image whose larger side is at least MinWidth pixels gets
	// variations (default 1024).
	MinWidth int `yaml:"minWidth"`
	// MinBytes: an image of at least MinBytes bytes gets variations too,
	// whatever its size (0: size alone decides).
	MinBytes int64 `yaml:"minBytes"`
	// Scales are the decoder's scales kept as copies: 2, 4 and/or 8 for
	// 1/2, 1/4 and 1/8 of the size (empty: all three; 4000 px: 2000, 1000
	// and 500 px). A copy is the JPEG or WebP decoder's own scaled decode
	// (engine.BuildVariations), so only those scales give a render the
	// original's pixels.
	Scales []int `yaml:"scales"`
	// Interval is how often every instance looks for due jobs (default
	// 10s); an upload on this instance wakes it at once.
	Interval time.Duration `yaml:"interval"`
	// RetryMin and RetryMax bound the backoff after a failed build
	// (defaults 30s and 30m): RetryMin after the first failure, doubling
	// up to RetryMax.
	RetryMin time.Duration `yaml:"retryMin"`
	RetryMax time.Duration `yaml:"retryMax"`
}

// On reports whether variations are enabled.
func (c VariationsConfig) On() bool { return c.Enabled == nil || *c.Enabled }

// Validate reports negative sizes or durations, RetryMax under RetryMin,
// and scales other than 2, 4 and 8.
func (c VariationsConfig) Validate() error {
	if c.MinWidth < 0 || c.MinBytes < 0 || c.Interval < 0 || c.RetryMin < 0 || c.RetryMax < 0 {
		return errors.New("variations: sizes and durations must not be negative")
	}
	if c.RetryMin > 0 && c.RetryMax > 0 && c.RetryMax < c.RetryMin {
		return errors.New("variations: retryMax is under retryMin")
	}
	for _, f := range c.Scales {
		if f != 2 && f != 4 && f != 8 {
			return fmt.Errorf("variations: scale %d is not 2, 4 or 8", f)
		}
	}
	return nil
}

// WithDefaults fills the builder's interval (10s) and backoff (30s to
// 30m): its own, whatever the blob queue's are.
func (c VariationsConfig) WithDefaults() VariationsConfig {
	if c.Interval <= 0 {
		c.Interval = 10 * time.Second
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 30 * time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 30 * time.Minute
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	return c
}

// Wants reports whether an image of w x h pixels and size bytes gets
// variations.
func (c VariationsConfig) Wants(w, h int, size int64) bool {
	if !c.On() {
		return false
	}
	minW := c.MinWidth
	if minW == 0 {
		minW = 1024
	}
	return max(w, h) >= minW || (c.MinBytes > 0 && size >= c.MinBytes)
}

// Ladder returns the scales to keep copies at, largest copy first.
func (c VariationsConfig) Ladder() []int {
	if len(c.Scales) == 0 {
		return []int{2, 4, 8}
	}
	out := slices.Clone(c.Scales)
	slices.Sort(out)
	return slices.Compact(out)
}

// StoredVariations builds the stored variations of images: the server's
// worker takes due jobs one at a time, paced (Pass); `vitrine variations`
// builds images that have none, flat out (BuildImage). It is the API's
// VariationBuilder: Wants decides which uploads get a job, Wake tells the
// worker one was queued.
type StoredVariations struct {
	db    *storage.DB
	blobs *storage.Blobs
	eng   *engine.Engine
	cfg   VariationsConfig // with its defaults
	wake  chan struct{}
}

// NewStoredVariations returns the builder of stored variations of the
// images in db and blobs with eng under cfg, or nil when variations are
// off.
func NewStoredVariations(db *storage.DB, blobs *storage.Blobs, eng *engine.Engine, cfg VariationsConfig) (*StoredVariations, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.On() {
		return nil, nil
	}
	return &StoredVariations{db: db, blobs: blobs, eng: eng, cfg: cfg.WithDefaults(), wake: make(chan struct{}, 1)}, nil
}

// Wants reports whether an upload of w x h pixels and size bytes gets
// variations (VariationsConfig.Wants).
func (b *StoredVariations) Wants(w, h int, size int64) bool { return b.cfg.Wants(w, h, size) }

// Wake makes the worker look for due jobs now (Wakeups).
func (b *StoredVariations) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Wakeups says when the worker should pass before its interval: an
// upload queued a job.
func (b *StoredVariations) Wakeups() <-chan struct{} { return b.wake }

// Interval is variations.interval (default 10s).
func (b *StoredVariations) Interval() time.Duration { return b.cfg.Interval }

// Pass takes one due job and builds it; it returns 1 when it took one
// (built or failed: a paced worker rests, then passes again), 0 when none
// was due.
func (b *StoredVariations) Pass(ctx context.Context) (int, error) {
	taken := 0
	p := storage.JobPass{Limit: 1, RetryMin: b.cfg.RetryMin, RetryMax: b.cfg.RetryMax}
	_, err := b.db.DrainVariationJobs(ctx, p, func(ctx context.Context, user, id string) error {
		taken++
		_, err := b.BuildImage(ctx, user, id)
		return err
	})
	return taken, err
}

// errNoPosterYet retries a video's job that ran before the upload stored
// its poster (or after the poster was lost: its next render makes it).
var errNoPosterYet = errors.New("the video's poster is not stored yet: its copies are built from it once it is")

// Built is what BuildImage added.
type Built struct {
	Variations int
	Bytes      int64
}

// BuildImage builds and stores the variations of one image that has none
// yet, and returns what it added (nothing for an image that is gone, wants
// none, has them already, or was deleted or replaced while they were
// built).
func (b *StoredVariations) BuildImage(ctx context.Context, user, id string) (Built, error) {
	img, err := b.db.Image(ctx, user, id)
	if errors.Is(err, storage.ErrNotExist) {
		return Built{}, nil
	}
	if err != nil {
		return Built{}, err
	}
	have, err := b.db.Variations(ctx, img)
	if err != nil {
		return Built{}, err
	}
	// A video's copies are built from its poster, as an image's from its
	// original; the poster is the one variation a video has until then.
	key := img.Key()
	if img.Video != nil {
		i := slices.IndexFunc(have, func(v storage.Variation) bool { return isPosterOf(img, v) })
		if i < 0 {
			return Built{}, errNoPosterYet
		}
		key = have[i].Key
		have = slices.Delete(have, i, i+1)
	}
	if len(have) > 0 || !b.cfg.Wants(img.Width, img.Height, img.Size) {
		return Built{}, nil
	}
	src, err := b.blobs.Get(ctx, key)
	if errors.Is(err, storage.ErrNotExist) {
		return Built{}, nil // deleted meanwhile
	}
	if err != nil {
		return Built{}, fmt.Errorf("variations of %s/%s: %w", user, id, err)
	}
	vs, err := b.eng.BuildVariations(ctx, src, b.cfg.Ladder())
	if err != nil {
		return Built{}, fmt.Errorf("variations of %s/%s: %w", user, id, err)
	}
	if len(vs) == 0 {
		return Built{}, nil
	}
	built := make([]storage.BuiltVariation, len(vs))
	r := Built{Variations: len(vs)}
	for i, v := range vs {
		built[i] = storage.BuiltVariation(v)
		r.Bytes += int64(len(v.Data))
	}
	if stored, err := b.db.StoreVariations(ctx, b.blobs, img, built); err != nil || !stored {
		return Built{}, err
	}
	return r, nil
}
