package storage

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// The blob queue and the variation jobs work the same way: a table of rows
// due at a time, drained in batches by any instance. drainDue is one pass
// over such a table and runDue the take of one row; the loops that call
// them live with their workers (package main).

// JobPass bounds one pass over a job table: how many jobs it takes, and
// how long a job whose try failed waits before the next.
type JobPass struct {
	// Limit is the most jobs the pass takes (0: every job due).
	Limit int
	// RetryMin is the wait after a first failed try; each further failure
	// doubles it, up to RetryMax. It is also how long a taken job stays
	// hidden from other instances. Both must be positive.
	RetryMin, RetryMax time.Duration
}

// Validate reports a bound that is not positive, RetryMax under RetryMin,
// or a negative Limit.
func (p JobPass) Validate() error {
	if p.Limit < 0 || p.RetryMin <= 0 || p.RetryMax < p.RetryMin {
		return fmt.Errorf("storage: job pass %+v: want Limit >= 0 and 0 < RetryMin <= RetryMax: %w", p, ErrInvalid)
	}
	return nil
}

// backoff is the wait before the try after attempts failed ones, which is
// also the lease of a taken row: RetryMin doubled per failure, at most
// RetryMax, with jitter, and never under RetryMin (retryAfter).
func (p JobPass) backoff(attempts int) time.Duration {
	return retryAfter(p.RetryMin, p.RetryMax, attempts)
}

// dueRow is a row of a table drained by drainDue.
type dueRow interface{ rowID() int64 }

func (r queueRow) rowID() int64        { return r.ID }
func (r variationJobRow) rowID() int64 { return r.ID }

// drainDue takes the rows of R's table due now, batch at a time in due
// order, and hands each to process once, up to limit rows (0: every one).
// It returns how many process finished (ok) and the first error; a row
// that fails is left for a later drain and the others go on.
func drainDue[R dueRow](ctx context.Context, db *DB, what string, batch, limit int, process func(context.Context, R) (bool, error)) (done int, firstErr error) {
	seen := map[int64]bool{}
	if limit > 0 {
		batch = min(batch, limit)
	}
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
			if limit > 0 && len(seen) >= limit {
				return done, firstErr
			}
		}
		if !progress || len(rows) < batch {
			return done, firstErr
		}
	}
}

// dueJob is how runDue handles one row: its table's model, what it is
// (for errors), the backoff bounds of its retries, and the counter a
// failed try adds to (none when nil).
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
	backoff := JobPass{RetryMin: j.retryMin, RetryMax: j.retryMax}.backoff(attempts)
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
	if err := work(); errors.Is(err, errHeld) {
		// Not a failure: the row goes back as it was, due again after
		// RetryMin, and the pass goes on.
		_, uerr := db.bun.NewUpdate().Model(j.model).Set("attempts = attempts - 1").
			Set("due = ?", time.Now().Add(j.retryMin).UnixMicro()).Set("last_error = ?", err.Error()).
			Where("id = ?", id).Exec(ctx)
		return false, uerr
	} else if err != nil {
		if j.failed != nil {
			j.failed.Add(1)
		}
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
