package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// Erasing a user (README "Erasing a user"): DELETE /users/<user> writes
// an erasure (storage.DB.RequestErasure), and the erasure worker of any
// instance takes it a step at a time (storage.DB.EraseStep): how many
// images a step erases, how long a taken erasure is held, how often to
// look and how fast to go is decided here.

// ErasureConfig tunes the erasure of users. The zero value is the
// default.
type ErasureConfig struct {
	// Batch is how many images one step erases, in one transaction
	// (default 100).
	Batch int `yaml:"batch"`
	// Interval is how often every instance looks for due erasures
	// (default 10s); a DELETE on the instance wakes it at once.
	Interval time.Duration `yaml:"interval"`
	// Lease is how long an erasure an instance took stays hidden from the
	// others (default 30s): longer than a step takes. The erasure of an
	// instance that dies is taken again, from its last committed step,
	// once the lease is over.
	Lease time.Duration `yaml:"lease"`
}

// Validate reports a negative batch or duration.
func (c ErasureConfig) Validate() error {
	if c.Batch < 0 || c.Interval < 0 || c.Lease < 0 {
		return errors.New("erasure: batch, interval and lease must not be negative")
	}
	return nil
}

// erasureWait is how long an erasure waiting for its user's blobs to be
// deleted rests before it is looked at again.
const erasureWait = time.Second

// erasureRetryMin and erasureRetryMax bound the backoff after a failed
// step.
const (
	erasureRetryMin = 10 * time.Second
	erasureRetryMax = 10 * time.Minute
)

// erasurePass is the pass of cfg; usageFlush is how often the usage
// counters are written (audit.flush), which the final step waits twice
// for, so that what was counted of the user before the erasure is written
// before it is erased.
func erasurePass(cfg ErasureConfig, usageFlush time.Duration) storage.ErasurePass {
	p := storage.ErasurePass{Batch: cfg.Batch, Lease: cfg.Lease, Wait: erasureWait,
		Settle: 2 * usageFlush, RetryMin: erasureRetryMin, RetryMax: erasureRetryMax}
	if p.Batch <= 0 {
		p.Batch = 100
	}
	if p.Lease <= 0 {
		p.Lease = 30 * time.Second
	}
	if usageFlush <= 0 {
		p.Settle = 2 * usageWorkerInterval
	}
	return p
}

// erasureWorker takes due erasures a step at a time (paced: it rests as
// long as each step took) every erasure.interval and when a DELETE wakes
// it; after a step that queued blob deletions it wakes the blob queue's
// worker, wake.
func erasureWorker(db *storage.DB, blobs *storage.Blobs, p storage.ErasurePass, interval time.Duration, wake func(), log *slog.Logger) *worker {
	pass := func(ctx context.Context) (int, error) {
		s, ok, err := db.EraseStep(ctx, blobs, p)
		if !ok {
			return 0, err
		}
		if s.Done {
			log.Info("user erased", "user", s.User, "erasure", s.Erasure)
		}
		if !s.Waiting {
			wake()
		}
		if s.Waiting {
			return 0, err
		}
		return 1, err
	}
	w := newWorker("erasures", interval, 10*time.Second, pass, log)
	w.paced = true
	return w
}
