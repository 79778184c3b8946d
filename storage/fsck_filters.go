package storage

import (
	"context"
	"fmt"
	"strings"
)

// filters finds filter versions whose bundle is missing, which no instance
// can load (not repaired: push the version again), and bundles under
// filters/ that no version names, older than the grace period and not
// queued: what a push left when it stopped between writing the bundle and
// committing its row. The repair queues those for deletion.
func (c *checker) filters(ctx context.Context) error {
	var rows []filterVersionRow
	if err := c.db.bun.NewSelect().Model(&rows).Column("name", "version").Order("name", "version").Scan(ctx); err != nil {
		return fmt.Errorf("storage: check filter versions: %w", err)
	}
	known := make(map[string]bool, len(rows))
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = FilterBlobKey(r.Version)
		known[keys[i]] = true
	}
	gone, err := c.missing(ctx, keys)
	if err != nil {
		return err
	}
	for i, g := range gone {
		if g {
			c.r.FilterVersionsWithoutBundle.add(c.opts.Examples, rows[i].Name+" "+rows[i].Version)
		}
	}
	c.r.FilterVersions = int64(len(rows))
	return c.listPages(ctx, "filters/", func(page []BlobInfo) error {
		c.r.FilterBundles += int64(len(page))
		var old []BlobInfo
		for _, b := range page {
			if !known[b.Key] && !b.ModTime.After(c.cutoff) && !strings.Contains(strings.TrimPrefix(b.Key, "filters/"), "/") {
				old = append(old, b)
			}
		}
		orphans, err := c.notQueued(ctx, old)
		if err != nil {
			return err
		}
		return c.orphanBlobs(ctx, &c.r.OrphanFilterBundles, orphans)
	})
}
