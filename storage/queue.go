package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// queueRow is the blob_queue table (migration step 7): one blob key, or
// key prefix, to delete once due.
//
// A row with attempts 0 and a due time in the future is a reservation: the
// key of a blob being written. The transaction that commits the row naming
// the blob claims it (deletes it, attempts still 0); a writer that dies,
// fails or finds its blob unneeded leaves it, and it is collected when due.
// A collector takes a due row by raising attempts (a compare-and-swap on
// the value it read), and only then deletes the blob; so a writer's claim
// and a collector's take exclude each other, and a committed row never
// names a blob that a collector is deleting.
type queueRow struct {
	bun.BaseModel `bun:"table:blob_queue"`

	ID        int64  `bun:"id,pk,autoincrement"`
	Key       string `bun:"blob_key"`
	Prefix    int    `bun:"prefix"` // 1: every key starting with Key
	Due       int64  `bun:"due"`    // unix microseconds
	Attempts  int    `bun:"attempts"`
	LastError string `bun:"last_error"`
	Created   int64  `bun:"created"` // unix microseconds
}

// maxQueueKey is the longest key blob_queue holds (MySQL's VARCHAR(700)).
const maxQueueKey = 700

// DefaultReservationLease is how long a reservation keeps its blob from
// being collected unless Options.ReservationLease says otherwise: longer
// than a blob write and the commit after it can take. When a write
// overruns it, the commit fails (ErrReservationLost) instead of naming a
// blob that may be gone.
const DefaultReservationLease = 5 * time.Minute

// ErrReservationLost: a reservation was collected before its writer
// committed (the writer overran its lease); the write must fail.
var ErrReservationLost = errors.New("storage: blob reservation expired before commit")

// Reservation is a blob key recorded in blob_queue before the blob is
// written, so that a write that never commits is collected. Reserve makes
// one; a commit that takes it (InsertImage's, VariantCache.Put's) claims
// it; Release gives it up.
type Reservation struct {
	id  int64
	Key string
}

// Reserve records key as about to be written: unless claimed within the
// reservation lease, the blob at key is deleted.
func (db *DB) Reserve(ctx context.Context, key string) (Reservation, error) {
	if err := checkLen("blob key", key, maxQueueKey, true); err != nil {
		return Reservation{}, err
	}
	t := time.Now()
	row := &queueRow{Key: key, Due: t.Add(db.lease).UnixMicro(), Created: t.UnixMicro()}
	if _, err := db.bun.NewInsert().Model(row).Exec(ctx); err != nil {
		return Reservation{}, fmt.Errorf("storage: reserve blob %s: %w", key, err)
	}
	if row.ID == 0 {
		return Reservation{}, fmt.Errorf("storage: reserve blob %s: no id returned", key)
	}
	return Reservation{id: row.ID, Key: key}, nil
}

// claim takes r inside tx: the blob is now named by a row tx commits.
// ErrReservationLost when a collector took it first.
func (db *DB) claim(ctx context.Context, tx bun.Tx, r Reservation) error {
	if r.id == 0 {
		return nil
	}
	res, err := tx.NewDelete().Model((*queueRow)(nil)).Where("id = ? AND attempts = 0", r.id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("claim blob %s: %w", r.Key, err)
	}
	if n, err := affected(res); err != nil || n != 1 {
		if err == nil {
			err = ErrReservationLost
		}
		return fmt.Errorf("claim blob %s: %w", r.Key, err)
	}
	return nil
}

// release makes r due now: its blob is not needed.
func (db *DB) release(ctx context.Context, idb bun.IDB, r Reservation) error {
	if r.id == 0 {
		return nil
	}
	_, err := idb.NewUpdate().Model((*queueRow)(nil)).Set("due = ?", time.Now().UnixMicro()).
		Where("id = ? AND attempts = 0", r.id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("storage: release blob %s: %w", r.Key, err)
	}
	return nil
}

// requeue queues r's key again after its reservation was lost: the
// collector that took it may have deleted the blob before the writer
// wrote it, so the blob is deleted once more.
func (db *DB) requeue(ctx context.Context, r Reservation) error {
	return db.enqueue(context.WithoutCancel(ctx), db.bun, []string{r.Key}, false, time.Now())
}

// Release gives r up: the blob (if any was written) is deleted as soon as
// a collector gets to it. A writer whose write or commit failed calls it;
// when it cannot (the database is down too), the reservation still expires.
func (db *DB) Release(ctx context.Context, r Reservation) error {
	return db.release(ctx, db.bun, r)
}

// enqueue adds keys to delete once due, inside the transaction that makes
// them unneeded.
func (db *DB) enqueue(ctx context.Context, idb bun.IDB, keys []string, prefix bool, due time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	t := time.Now().UnixMicro()
	rows := make([]queueRow, len(keys))
	for i, k := range keys {
		if err := checkLen("blob key", k, maxQueueKey, true); err != nil {
			return err
		}
		rows[i] = queueRow{Key: k, Due: due.UnixMicro(), Created: t}
		if prefix {
			rows[i].Prefix = 1
		}
	}
	if _, err := idb.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return fmt.Errorf("queue blob deletions: %w", err)
	}
	return nil
}

// QueueStats describes blob_queue.
type QueueStats struct {
	// Pending counts every row: reservations, due and failing deletions.
	Pending int64 `json:"pending"`
	// Due counts the rows a collector may take now.
	Due int64 `json:"due"`
	// Failing counts the rows taken at least once whose last try failed.
	Failing int64 `json:"failing"`
}

// QueueStats counts the queue's rows.
func (db *DB) QueueStats(ctx context.Context) (QueueStats, error) {
	var s QueueStats
	now := time.Now().UnixMicro()
	err := db.bun.NewSelect().Model((*queueRow)(nil)).
		ColumnExpr("COUNT(*)").
		ColumnExpr("COALESCE(SUM(CASE WHEN due <= ? THEN 1 ELSE 0 END), 0)", now).
		ColumnExpr("COALESCE(SUM(CASE WHEN last_error <> '' THEN 1 ELSE 0 END), 0)").
		Scan(ctx, &s.Pending, &s.Due, &s.Failing)
	if err != nil {
		return QueueStats{}, fmt.Errorf("storage: queue stats: %w", err)
	}
	return s, nil
}

// Queued reports which of keys have a row in blob_queue (reserved, or
// waiting to be deleted).
func (db *DB) Queued(ctx context.Context, keys []string) (map[string]bool, error) {
	found := map[string]bool{}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		var got []string
		err := db.bun.NewSelect().Model((*queueRow)(nil)).Column("blob_key").
			Where("blob_key IN (?)", bun.List(keys[:n])).Scan(ctx, &got)
		if err != nil {
			return nil, fmt.Errorf("storage: queued blobs: %w", err)
		}
		for _, k := range got {
			found[k] = true
		}
		keys = keys[n:]
	}
	return found, nil
}

// CollectorConfig tunes the collector that drains blob_queue. The zero
// value is the default.
type CollectorConfig struct {
	// Interval is how often every instance looks for due rows (default
	// 10s); a delete on this instance wakes it at once. The loop that
	// calls Drain reads it (package main's workers) and owns its default.
	Interval time.Duration `yaml:"interval"`
	// RetryMin is the wait after a first failed try (default 30s); each
	// further failure doubles it, up to RetryMax (default 30m). It is also
	// how long a taken row stays hidden from other collectors.
	RetryMin time.Duration `yaml:"retryMin"`
	RetryMax time.Duration `yaml:"retryMax"`
	// ReservationLease is how long a blob being written is kept from the
	// collector before its row commits (default 5m); a write that takes
	// longer fails. It belongs to the database handle (Options), and is set
	// here so that the queue's settings live together.
	ReservationLease time.Duration `yaml:"reservationLease"`
}

// Validate reports a negative duration or RetryMax under RetryMin.
func (c CollectorConfig) Validate() error {
	if c.Interval < 0 || c.RetryMin < 0 || c.RetryMax < 0 || c.ReservationLease < 0 {
		return fmt.Errorf("storage: blobQueue: durations must not be negative: %w", ErrInvalid)
	}
	if c.RetryMin > 0 && c.RetryMax > 0 && c.RetryMax < c.RetryMin {
		return fmt.Errorf("storage: blobQueue: retryMax is under retryMin: %w", ErrInvalid)
	}
	return nil
}

func (c CollectorConfig) withDefaults() CollectorConfig {
	if c.RetryMin == 0 {
		c.RetryMin = 30 * time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = 30 * time.Minute
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	return c
}

// Collector drains blob_queue: each Drain deletes the blobs of due rows,
// retrying failures with exponential backoff. Every instance drains it
// (package main's workers); two draining at once never take the same row
// at the same time, and a blob deleted twice is no error.
type Collector struct {
	db    *DB
	blobs *Blobs
	cfg   CollectorConfig

	deleted, failed atomic.Int64
}

// NewCollector returns a collector over db and blobs.
func NewCollector(db *DB, blobs *Blobs, cfg CollectorConfig) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Collector{db: db, blobs: blobs, cfg: cfg.withDefaults()}, nil
}

// CollectorStats counts what this collector did.
type CollectorStats struct{ Deleted, Failed int64 }

// Stats returns the counters.
func (c *Collector) Stats() CollectorStats {
	return CollectorStats{Deleted: c.deleted.Load(), Failed: c.failed.Load()}
}

// Drain takes every row due now, a batch at a time, and deletes its blobs.
// It returns how many rows it finished and the first error of a blob
// store or database that failed (rows whose blob could not be deleted are
// retried later; the others go on).
func (c *Collector) Drain(ctx context.Context) (done int, firstErr error) {
	return drainDue(ctx, c.db, "blob deletions", 64, 0, c.process)
}

// process takes one row and deletes its blob; ok when the row is done.
func (c *Collector) process(ctx context.Context, r queueRow) (ok bool, err error) {
	j := dueJob{model: (*queueRow)(nil), what: "blob deletion", retryMin: c.cfg.RetryMin, retryMax: c.cfg.RetryMax, failed: &c.failed}
	ok, err = runDue(ctx, c.db, j, r.ID, r.Attempts, func() error {
		// Why after the take: a row committed after a backup's snapshot
		// (naming a blob the snapshot names) is taken after the hold
		// that came before the snapshot, so this sees it.
		if r.Key != holdKey {
			if held, err := c.db.blobsHeld(ctx); err != nil || held {
				return cmp.Or(err, errHeld)
			}
		}
		if r.Prefix == 1 {
			return c.blobs.DeletePrefix(ctx, r.Key)
		}
		return c.blobs.Delete(ctx, r.Key)
	})
	if ok {
		c.deleted.Add(1)
	}
	return ok, err
}
