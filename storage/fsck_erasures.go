package storage

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// erasedUsers finds what is left of erased users (ErasedUserLeftovers):
// for every user whose last erasure is done and who has no image now (a
// user who uploaded again since is checked as any other), each table
// that an erasure empties (the images and every part, erasure_parts.go)
// holding rows of the user, and every blob under the user's key
// prefixes, whatever its age. The repair queues those blobs; rows are
// only reported (erasing the user again removes them).
func (c *checker) erasedUsers(ctx context.Context) error {
	var users []string
	err := c.db.bun.NewSelect().Model((*erasureRow)(nil)).Distinct().Column("user_name").
		Where("finished <> 0").Order("user_name").Scan(ctx, &users)
	if err != nil {
		return fmt.Errorf("storage: check erased users: %w", err)
	}
	for i, user := range users {
		c.opts.Progress("erased users", int64(i+1), int64(len(users)))
		if busy, err := c.db.Erasing(ctx, user); err != nil || busy {
			if err != nil {
				return err
			}
			continue
		}
		data, err := c.db.userData(ctx, c.db.bun, user)
		if err != nil {
			return fmt.Errorf("storage: check erased user %s: %w", user, err)
		}
		if data["images"] > 0 {
			continue
		}
		c.r.ErasedUsers++
		f := &c.r.ErasedUserLeftovers
		kinds := make([]string, 0, len(data))
		for k := range data {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			if n := data[k]; n > 0 {
				f.add(c.opts.Examples, fmt.Sprintf("%s: %d %s", user, n, k))
			}
		}
		for _, p := range userPrefixes(user) {
			err := c.listPages(ctx, p, func(page []BlobInfo) error {
				keys := make([]string, len(page))
				for i, b := range page {
					keys[i] = b.Key
					f.add(c.opts.Examples, b.Key)
				}
				if !c.opts.Repair {
					return nil
				}
				queued, err := c.db.Queued(ctx, keys)
				if err != nil {
					return err
				}
				keys = slices.DeleteFunc(keys, func(k string) bool { return queued[k] })
				if err := c.db.enqueue(ctx, c.db.bun, keys, false, time.Now()); err != nil {
					return fmt.Errorf("storage: repair: %w", err)
				}
				f.Repaired += int64(len(page))
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
