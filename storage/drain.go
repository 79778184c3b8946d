package storage

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

// dueJob is how runDue handles one row: its table's model, what it is
// (for errors), the backoff bounds of its retries, and the counter a
// failed try adds to.
type dueJob struct {
	model              any
	what               string
	retryMin, retryMax time.Duration
	failed             *atomic.Int64
}

// runDue claims the row id, tried attempts times before, by a
// compare-and-swap on attempts that also pushes its due time past the
// backoff (so a crash retries it), runs work, and then deletes the row, or
// records work's error in last_error for a later try. ok when the row is
// done; false and no error when another instance took it first.
func runDue(ctx context.Context, db *DB, j dueJob, id int64, attempts int, work func() error) (ok bool, err error) {
	backoff := j.retryMin << min(attempts, 20)
	if backoff > j.retryMax || backoff <= 0 {
		backoff = j.retryMax
	}
	res, err := db.bun.NewUpdate().Model(j.model).
		Set("attempts = attempts + 1").
		Set("due = ?", time.Now().Add(backoff).UnixMicro()).
		Where("id = ? AND attempts = ?", id, attempts).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("storage: take %s: %w", j.what, err)
	}
	if n, err := affected(res); err != nil || n == 0 {
		return false, err // taken by another instance (or claimed by its writer)
	}
	if err := work(); err != nil {
		j.failed.Add(1)
		msg := err.Error()
		if len(msg) > 1000 {
			msg = msg[:1000]
		}
		if _, uerr := db.bun.NewUpdate().Model(j.model).Set("last_error = ?", msg).
			Where("id = ?", id).Exec(ctx); uerr != nil {
			return false, errors.Join(err, uerr)
		}
		return false, err
	}
	if _, err := db.bun.NewDelete().Model(j.model).Where("id = ?", id).Exec(ctx); err != nil {
		return false, fmt.Errorf("storage: finish %s: %w", j.what, err)
	}
	return true, nil
}
