package storage

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

// A stored variation is a downscaled working copy of an image, kept in the
// blob store beside it so that a request for a small output decodes the
// smallest copy that still holds enough pixels instead of the whole original.
// Which images get them, at which scales, is the caller's policy: an image
// committed with a job (CommitImage) gets them built in the background from
// variation_jobs (DrainVariationJobs, StoreVariations). They belong to one
// upload (their keys carry its blob token),
// are counted in no user's image count or bytes, and are deleted with their
// image through blob_queue.

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
// commit, and its reserved blobs are collected (StoreVariations).
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
