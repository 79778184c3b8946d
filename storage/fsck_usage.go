package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// usageRows compares each user's row of image_counts, which the quotas
// are checked against, with the user's images (their number and total
// size): first every row, a page of users at a time, then the users that
// have images and no row. A difference is read again under the row's lock
// before it counts, so an upload in flight is no finding; the repair
// recounts the row under that lock.
func (c *checker) usageRows(ctx context.Context) error {
	total := c.count(ctx, (*countRow)(nil))
	last, first := "", true
	for {
		var rows []countRow
		q := c.db.bun.NewSelect().Model(&rows).Order("user_name").Limit(checkPage)
		if !first {
			q = q.Where("user_name > ?", last)
		}
		if err := q.Scan(ctx); err != nil {
			return fmt.Errorf("storage: check usage: %w", err)
		}
		if len(rows) == 0 {
			break
		}
		users := make([]string, len(rows))
		for i, r := range rows {
			users[i] = r.User
		}
		var stored []countRow
		err := c.db.bun.NewSelect().Model((*imageRow)(nil)).
			ColumnExpr("user_name, COUNT(*) AS images, COALESCE(SUM(size), 0) AS bytes").
			Where("user_name IN (?)", bun.List(users)).Group("user_name").Scan(ctx, &stored)
		if err != nil {
			return fmt.Errorf("storage: check usage: %w", err)
		}
		byUser := make(map[string]countRow, len(stored))
		for _, s := range stored {
			byUser[s.User] = s
		}
		for _, r := range rows {
			s := byUser[r.User]
			if s.Images != r.Images || s.Bytes != r.Bytes {
				if err := c.recount(ctx, r.User); err != nil {
					return err
				}
			}
		}
		c.r.Users += int64(len(rows))
		c.opts.Progress("usage rows", c.r.Users, total)
		last, first = rows[len(rows)-1].User, false
	}
	var uncounted []string
	err := c.db.bun.NewSelect().TableExpr("images AS i").ColumnExpr("DISTINCT i.user_name").
		Join("LEFT JOIN image_counts AS c ON c.user_name = i.user_name").
		Where("c.user_name IS NULL").OrderExpr("i.user_name").Scan(ctx, &uncounted)
	if err != nil {
		return fmt.Errorf("storage: check usage: %w", err)
	}
	for _, u := range uncounted {
		if err := c.recount(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// recount reads user's row of image_counts and counts the user's images
// in one transaction that holds the row's lock (the repair makes the row
// when it is missing, and writes the count into it), and records a
// difference.
func (c *checker) recount(ctx context.Context, user string) error {
	var recorded, stored countRow
	err := c.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if c.opts.Repair {
			// An upsert that adds nothing: it takes the row's lock, as an
			// upload's does, and makes the row when it is missing.
			if err := c.db.addCount(ctx, tx, user, 0, 0); err != nil {
				return err
			}
		}
		var rows []countRow
		if err := c.db.forUpdate(tx.NewSelect().Model(&rows).Where("user_name = ?", user)).Scan(ctx); err != nil {
			return err
		}
		if len(rows) == 1 {
			recorded = rows[0]
		}
		err := tx.NewSelect().Model((*imageRow)(nil)).ColumnExpr("COUNT(*), COALESCE(SUM(size), 0)").
			Where("user_name = ?", user).Scan(ctx, &stored.Images, &stored.Bytes)
		if err != nil || !c.opts.Repair || stored == recorded {
			return err
		}
		_, err = tx.NewUpdate().Model((*countRow)(nil)).Set("images = ?", stored.Images).Set("bytes = ?", stored.Bytes).
			Where("user_name = ?", user).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: recount images of %s: %w", user, err)
	}
	stored.User = user
	if stored == (countRow{User: user, Images: recorded.Images, Bytes: recorded.Bytes}) {
		return nil // an upload or a delete was in flight
	}
	f := &c.r.UsageMismatches
	f.add(c.opts.Examples, fmt.Sprintf("%s: %d images, %d bytes recorded; %d images, %d bytes stored",
		user, recorded.Images, recorded.Bytes, stored.Images, stored.Bytes))
	if c.opts.Repair {
		f.Repaired++
	}
	return nil
}

// countRow is the image_counts table (migration step 6): what a user
// stores, which the quotas are checked against.
type countRow struct {
	bun.BaseModel `bun:"table:image_counts"`

	User   string `bun:"user_name,pk"`
	Images int64  `bun:"images"`
	Bytes  int64  `bun:"bytes"`
}
