package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// imageRows finds image records whose blob is missing.
func (c *checker) imageRows(ctx context.Context) error {
	total := c.count(ctx, (*imageRow)(nil))
	var lastUser, lastID string
	for {
		var rows []imageRow
		q := c.db.bun.NewSelect().Model(&rows).Column("user_name", "identifier", "blob_token").
			OrderExpr("user_name, identifier").Limit(checkPage)
		if lastUser != "" || lastID != "" {
			q = q.Where("user_name > ? OR (user_name = ? AND identifier > ?)", lastUser, lastUser, lastID)
		}
		if err := q.Scan(ctx); err != nil {
			return fmt.Errorf("storage: check images: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		keys := make([]string, len(rows))
		for i, r := range rows {
			keys[i] = ImageKey(r.User, r.Identifier, r.BlobToken)
		}
		gone, err := c.missing(ctx, keys)
		if err != nil {
			return err
		}
		for i, g := range gone {
			if g {
				c.r.ImagesWithoutBlob.add(c.opts.Examples, keys[i])
			}
		}
		c.r.Images += int64(len(rows))
		c.opts.Progress("image records", c.r.Images, total)
		last := rows[len(rows)-1]
		lastUser, lastID = last.User, last.Identifier
	}
}

// imageBlobs finds image blobs that no record names.
func (c *checker) imageBlobs(ctx context.Context) error {
	named := func(ctx context.Context, user string, ids []string) (map[string]bool, error) {
		var rows []imageRow
		err := c.db.bun.NewSelect().Model(&rows).Column("user_name", "identifier", "blob_token").
			Where("user_name = ? AND identifier IN (?)", user, bun.List(ids)).Scan(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: check image blobs: %w", err)
		}
		keys := map[string]bool{}
		for _, r := range rows {
			keys[ImageKey(r.User, r.Identifier, r.BlobToken)] = true
		}
		return keys, nil
	}
	return c.listPages(ctx, "images/", func(page []BlobInfo) error {
		c.r.ImageBlobs += int64(len(page))
		c.opts.Progress("image blobs", c.r.ImageBlobs, 0)
		orphans, err := c.orphans(ctx, page, named)
		if err != nil {
			return err
		}
		return c.orphanBlobs(ctx, &c.r.OrphanImageBlobs, orphans)
	})
}
