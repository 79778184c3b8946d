package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// variantRows finds variant records whose image is gone or whose blob is
// missing, and sums the cache's size as recorded.
func (c *checker) variantRows(ctx context.Context) error {
	total := c.count(ctx, (*variantRow)(nil))
	var last variantRow
	for {
		var rows []struct {
			User       string  `bun:"user_name"`
			Identifier string  `bun:"identifier"`
			Hash       string  `bun:"hash"`
			BlobToken  string  `bun:"blob_token"`
			Size       int64   `bun:"size"`
			Image      *string `bun:"image"`
		}
		q := c.db.bun.NewSelect().TableExpr("variants AS v").
			ColumnExpr("v.user_name, v.identifier, v.hash, v.blob_token, v.size, i.identifier AS image").
			Join("LEFT JOIN images AS i ON i.user_name = v.user_name AND i.identifier = v.identifier AND i.blob_token = v.blob_token").
			OrderExpr("v.user_name, v.identifier, v.hash").Limit(checkPage)
		if last.User != "" {
			q = q.Where("v.user_name > ? OR (v.user_name = ? AND (v.identifier > ? OR (v.identifier = ? AND v.hash > ?)))",
				last.User, last.User, last.Identifier, last.Identifier, last.Hash)
		}
		if err := q.Scan(ctx, &rows); err != nil {
			return fmt.Errorf("storage: check variants: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		vrows := make([]variantRow, len(rows))
		keys := make([]string, len(rows))
		for i, r := range rows {
			vrows[i] = variantRow{User: r.User, Identifier: r.Identifier, Hash: r.Hash, BlobToken: r.BlobToken, Size: r.Size}
			keys[i] = vrows[i].key()
			c.r.VariantRecordBytes += r.Size
		}
		gone, err := c.missing(ctx, keys)
		if err != nil {
			return err
		}
		for i := range rows {
			r := &vrows[i]
			var f *Findings
			switch {
			case rows[i].Image == nil:
				f = &c.r.VariantsOfDeletedImages
			case gone[i]:
				f = &c.r.VariantsWithoutBlob
			default:
				continue
			}
			f.add(c.opts.Examples, keys[i])
			if c.opts.Repair {
				if err := c.dropVariant(ctx, r); err != nil {
					return err
				}
				f.Repaired++
			}
		}
		c.r.Variants += int64(len(rows))
		c.opts.Progress("variant records", c.r.Variants, total)
		last = vrows[len(vrows)-1]
	}
}

// dropVariant deletes one variant record and queues its blob, together.
func (c *checker) dropVariant(ctx context.Context, r *variantRow) error {
	err := c.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*variantRow)(nil)).
			Where("user_name = ? AND identifier = ? AND hash = ?", r.User, r.Identifier, r.Hash).Exec(ctx); err != nil {
			return err
		}
		return c.db.enqueue(ctx, tx, []string{r.key()}, false, time.Now())
	})
	if err != nil {
		return fmt.Errorf("storage: repair variant %s: %w", r.key(), err)
	}
	return nil
}

// variantBlobs finds variant blobs that no record names, and sums the
// cache's size as stored.
func (c *checker) variantBlobs(ctx context.Context) error {
	named := func(ctx context.Context, user string, ids []string) (map[string]bool, error) {
		var rows []variantRow
		err := c.db.bun.NewSelect().Model(&rows).Column("user_name", "identifier", "hash", "blob_token").
			Where("user_name = ? AND identifier IN (?)", user, bun.List(ids)).Scan(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: check variant blobs: %w", err)
		}
		keys := map[string]bool{}
		for i := range rows {
			keys[rows[i].key()] = true
		}
		return keys, nil
	}
	return c.listPages(ctx, "variants/", func(page []BlobInfo) error {
		c.r.VariantBlobs += int64(len(page))
		for _, b := range page {
			c.r.VariantBlobBytes += b.Size
		}
		c.opts.Progress("variant blobs", c.r.VariantBlobs, 0)
		orphans, err := c.orphans(ctx, page, named)
		if err != nil {
			return err
		}
		return c.orphanBlobs(ctx, &c.r.OrphanVariantBlobs, orphans)
	})
}
