package storage

import (
	"context"
	"fmt"
	"time"
)

// The blob queue's collector and the variation builder work the same way:
// a table of rows due at a time, drained in batches by any instance, on a
// ticker and when woken. These two functions are that loop.

// runEvery calls drain at once, then every interval and whenever wake
// fires, until ctx ends; errors go to onError.
func runEvery(ctx context.Context, interval time.Duration, wake <-chan struct{}, drain func(context.Context) (int, error), onError func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := drain(ctx); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
	}
}

// dueRow is a row of a table drained by drainDue.
type dueRow interface{ rowID() int64 }

func (r queueRow) rowID() int64        { return r.ID }
func (r variationJobRow) rowID() int64 { return r.ID }

// drainDue takes the rows of R's table due now, batch at a time in due
// order, and hands each to process once. It returns how many process
// finished (ok) and the first error; a row that fails is left for a later
// drain and the others go on.
func drainDue[R dueRow](ctx context.Context, db *DB, what string, batch int, process func(context.Context, R) (bool, error)) (done int, firstErr error) {
	seen := map[int64]bool{}
	for {
		var rows []R
		err := db.bun.NewSelect().Model(&rows).Where("due <= ?", time.Now().UnixMicro()).
			OrderExpr("due ASC").Limit(int64(batch)).Scan(ctx)
		if err != nil {
			return done, fmt.Errorf("storage: due %s: %w", what, err)
		}
		progress := false
		for _, r := range rows {
			if seen[r.rowID()] {
				continue
			}
			seen[r.rowID()] = true
			progress = true
			ok, err := process(ctx, r)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if ok {
				done++
			}
		}
		if !progress || len(rows) < batch {
			return done, firstErr
		}
	}
}
