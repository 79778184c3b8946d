package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// variationRows finds stored variation records whose blob is missing; the
// repair drops them (and queues the image's job again, so that its
// variations are rebuilt).
func (c *checker) variationRows(ctx context.Context) error {
	total := c.count(ctx, (*variationRow)(nil))
	var last variationRow
	for {
		var rows []variationRow
		q := c.db.bun.NewSelect().Model(&rows).Order("user_name", "identifier", "width").Limit(checkPage)
		if last.User != "" {
			q = q.Where("user_name > ? OR (user_name = ? AND (identifier > ? OR (identifier = ? AND width > ?)))",
				last.User, last.User, last.Identifier, last.Identifier, last.Width)
		}
		if err := q.Scan(ctx); err != nil {
			return fmt.Errorf("storage: check variations: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		keys := make([]string, len(rows))
		for i, r := range rows {
			keys[i] = VariationKey(r.User, r.Identifier, r.BlobToken, r.Width, r.Ext)
		}
		gone, err := c.missing(ctx, keys)
		if err != nil {
			return err
		}
		for i := range rows {
			if !gone[i] {
				continue
			}
			c.r.VariationsWithoutBlob.add(c.opts.Examples, keys[i])
			if c.opts.Repair {
				if err := c.dropVariations(ctx, rows[i].User, rows[i].Identifier); err != nil {
					return err
				}
				c.r.VariationsWithoutBlob.Repaired++
			}
		}
		c.r.Variations += int64(len(rows))
		c.opts.Progress("variation records", c.r.Variations, total)
		last = rows[len(rows)-1]
	}
}

// dropVariations drops every variation of an image (queuing their blobs)
// and queues a job to build them again, in one transaction.
func (c *checker) dropVariations(ctx context.Context, user, id string) error {
	err := c.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := c.db.dropVariations(ctx, tx, user, id); err != nil {
			return err
		}
		return c.db.addVariationJob(ctx, tx, user, id)
	})
	if err != nil {
		return fmt.Errorf("storage: repair variations of %s/%s: %w", user, id, err)
	}
	return nil
}

// variationBlobs finds variation blobs that no record names.
func (c *checker) variationBlobs(ctx context.Context) error {
	named := func(ctx context.Context, user string, ids []string) (map[string]bool, error) {
		var rows []variationRow
		err := c.db.bun.NewSelect().Model(&rows).
			Where("user_name = ? AND identifier IN (?)", user, bun.List(ids)).Scan(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: check variation blobs: %w", err)
		}
		keys := map[string]bool{}
		for _, r := range rows {
			keys[VariationKey(r.User, r.Identifier, r.BlobToken, r.Width, r.Ext)] = true
		}
		return keys, nil
	}
	return c.listPages(ctx, "variations/", func(page []BlobInfo) error {
		c.r.VariationBlobs += int64(len(page))
		c.opts.Progress("variation blobs", c.r.VariationBlobs, 0)
		orphans, err := c.orphans(ctx, page, named)
		if err != nil {
			return err
		}
		return c.orphanBlobs(ctx, &c.r.OrphanVariationBlobs, orphans)
	})
}
