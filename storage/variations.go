package storage

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

// A stored variation is a downscaled working copy of an image, kept in the
// blob store beside it so that a request for a small output decodes the
// smallest copy that still holds enough pixels instead of the whole original.
// Variations are made in the background (VariationBuilder) from
// variation_jobs, belong to one upload (their keys carry its blob token),
// are counted in no user's image count or bytes, and are deleted with their
// image through blob_queue.

// VariationsConfig chooses which images get variations and at which
// scales. The zero value is the default: on, for images at least 1024 px
// wide or high, copies at 1/2, 1/4 and 1/8 of the size.
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
	// and 500 px). A copy is the JPEG or WebP decoder's own scaled decode,
	// so only those scales give a render the original's pixels.
	Scales []int `yaml:"scales"`
	// Interval is how often every instance looks for due jobs (default
	// 10s); an upload on this instance wakes it at once.
	Interval time.Duration `yaml:"interval"`
	// RetryMin and RetryMax bound the backoff after a failed build
	// (defaults 30s and 30m), as blobQueue's do.
	RetryMin time.Duration `yaml:"retryMin"`
	RetryMax time.Duration `yaml:"retryMax"`
}

// On reports whether variations are enabled.
func (c VariationsConfig) On() bool { return c.Enabled == nil || *c.Enabled }

// Validate reports negative sizes or durations, and scales other than 2,
// 4 and 8.
func (c VariationsConfig) Validate() error {
	if c.MinWidth < 0 || c.MinBytes < 0 || c.Interval < 0 || c.RetryMin < 0 || c.RetryMax < 0 {
		return fmt.Errorf("storage: variations: sizes and durations must not be negative: %w", ErrInvalid)
	}
	for _, f := range c.Scales {
		if f != 2 && f != 4 && f != 8 {
			return fmt.Errorf("storage: variations: scale %d is not 2, 4 or 8: %w", f, ErrInvalid)
		}
	}
	return nil
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

// variationRow is the variations table (migration step 15).
type variationRow struct {
	bun.BaseModel `bun:"table:variations"`

	User       string `bun:"user_name,pk"`
	Identifier string `bun:"identifier,pk"`
	Width      int    `bun:"width,pk"`
	Height     int    `bun:"height"`
	OrigWidth  int    `bun:"orig_width"`
	OrigHeight int    `bun:"orig_height"`
	Ext        string `bun:"ext"`
	Size       int64  `bun:"size"`
	BlobToken  string `bun:"blob_token"`
	Created    int64  `bun:"created"`
}

// Variation is one stored variation of an image.
type Variation struct {
	// Width and Height are the variation's pixels as decoded (before any
	// EXIF orientation), OrigWidth and OrigHeight the original's, alike.
	Width, Height         int
	OrigWidth, OrigHeight int
	// Ext is its format (tif; jpg or webp for copies made before they
	// were lossless), Size its bytes.
	Ext  string
	Size int64
	// Key is its blob key.
	Key string
}

// VariationPrefix is the key prefix of every variation of one upload.
func VariationPrefix(user, id, token string) string {
	return "variations/" + user + "/" + tokenized(id, token) + "/"
}

// VariationKey is the blob key of one variation of one upload.
func VariationKey(user, id, token string, width int, ext string) string {
	return VariationPrefix(user, id, token) + strconv.Itoa(width) + "." + ext
}

// Variations returns img's stored variations, narrowest first (none for
// an image of another upload than the one they were made from).
func (db *DB) Variations(ctx context.Context, img Image) ([]Variation, error) {
	var rows []variationRow
	err := db.bun.NewSelect().Model(&rows).
		Where("user_name = ? AND identifier = ? AND blob_token = ?", img.User, img.Identifier, img.BlobToken).
		Order("width ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: variations of %s/%s: %w", img.User, img.Identifier, err)
	}
	out := make([]Variation, len(rows))
	for i, r := range rows {
		out[i] = Variation{Width: r.Width, Height: r.Height, OrigWidth: r.OrigWidth, OrigHeight: r.OrigHeight,
			Ext: r.Ext, Size: r.Size, Key: VariationKey(r.User, r.Identifier, r.BlobToken, r.Width, r.Ext)}
	}
	return out, nil
}

// dropVariations deletes an image's variation rows and jobs inside tx and
// queues the deletion of their blobs. A build still running then fails to
// commit, and its reserved blobs are collected (VariationBuilder).
func (db *DB) dropVariations(ctx context.Context, tx bun.Tx, user, id string) error {
	var rows []variationRow
	if err := tx.NewSelect().Model(&rows).Where("user_name = ? AND identifier = ?", user, id).Scan(ctx); err != nil {
		return fmt.Errorf("list variations: %w", err)
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = VariationKey(r.User, r.Identifier, r.BlobToken, r.Width, r.Ext)
	}
	if _, err := tx.NewDelete().Model((*variationRow)(nil)).
		Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
		return fmt.Errorf("drop variations: %w", err)
	}
	if _, err := tx.NewDelete().Model((*variationJobRow)(nil)).
		Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
		return fmt.Errorf("drop variation jobs: %w", err)
	}
	return db.enqueue(ctx, tx, keys, false, time.Now())
}
