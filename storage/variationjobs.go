package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// variationJobRow is the variation_jobs table (migration step 14): one
// image whose variations are to be built once due.
type variationJobRow struct {
	bun.BaseModel `bun:"table:variation_jobs"`

	ID         int64  `bun:"id,pk,autoincrement"`
	User       string `bun:"user_name"`
	Identifier string `bun:"identifier"`
	Due        int64  `bun:"due"` // unix microseconds
	Attempts   int    `bun:"attempts"`
	LastError  string `bun:"last_error"`
	Created    int64  `bun:"created"` // unix microseconds
}

// addVariationJob queues the building of an image's variations inside the
// transaction that commits it (or at once with db.bun).
func (db *DB) addVariationJob(ctx context.Context, idb bun.IDB, user, id string) error {
	t := time.Now().UnixMicro()
	row := &variationJobRow{User: user, Identifier: id, Due: t, Created: t}
	if _, err := idb.NewInsert().Model(row).Exec(ctx); err != nil {
		return fmt.Errorf("queue variations of %s/%s: %w", user, id, err)
	}
	return nil
}

// BuiltVariation is one variation made by a BuildFunc.
type BuiltVariation struct {
	Width, Height         int
	OrigWidth, OrigHeight int
	Ext                   string
	Data                  []byte
}

// BuildFunc makes the variations of one image from its stored bytes, at
// the given decoder scales (2, 4, 8: largest copy first). It returns none
// for an image it does not make variations of (an animation, a format
// whose decoder does not scale).
type BuildFunc func(ctx context.Context, src []byte, scales []int) ([]BuiltVariation, error)

// VariationBuilder drains variation_jobs: for each due job it reads the
// image, builds its variations, writes their blobs (reserved first, so a
// build that never commits leaves nothing behind) and commits their rows.
// Every instance runs one; two never take the same job at once, and a job
// whose instance dies is taken again once its backoff is over.
type VariationBuilder struct {
	db    *DB
	blobs *Blobs
	cfg   VariationsConfig
	build BuildFunc
	wake  chan struct{}
	paced bool // Run's drains rest between jobs (restAfter)

	built, failed atomic.Int64
}

// NewVariationBuilder returns a builder over db and blobs.
func NewVariationBuilder(db *DB, blobs *Blobs, cfg VariationsConfig, build BuildFunc) (*VariationBuilder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &VariationBuilder{db: db, blobs: blobs, cfg: cfg, build: build, wake: make(chan struct{}, 1)}, nil
}

// Wake makes Run drain now instead of at its next tick.
func (b *VariationBuilder) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Run drains every Interval, and when woken, until ctx ends; errors go to
// onError. It returns at once when variations are off.
func (b *VariationBuilder) Run(ctx context.Context, onError func(error)) {
	if !b.cfg.On() {
		return
	}
	cc := CollectorConfig{Interval: b.cfg.Interval}.withDefaults()
	b.paced = true
	runEvery(ctx, cc.Interval, b.wake, b.Drain, onError)
}

// restAfter is how long Run's drains rest after a job, as a multiple of
// the time the job took. Why: building an image's copies decodes it three
// times (0.4 s of a core for 12 MP), and building flat out beside
// back-to-back uploads slowed their median by 5-34% on 2 cores
// (e2e/load/upload.sh); resting as long as it worked caps the builder at
// half a core, and a backlog drains once uploads pause.
const restAfter = 1

// rest waits restAfter times took, or until ctx ends.
func (b *VariationBuilder) rest(ctx context.Context, took time.Duration) {
	if !b.paced {
		return
	}
	t := time.NewTimer(restAfter * took)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// BuilderStats counts what a builder did: images whose variations it
// committed, and failed tries.
type BuilderStats struct{ Built, Failed int64 }

// Stats returns the counters.
func (b *VariationBuilder) Stats() BuilderStats {
	return BuilderStats{Built: b.built.Load(), Failed: b.failed.Load()}
}

// Drain takes every job due now and runs it. It returns how many jobs it
// finished and the first error (a failed job is retried later; the others
// go on).
func (b *VariationBuilder) Drain(ctx context.Context) (done int, firstErr error) {
	return drainDue(ctx, b.db, "variation jobs", 16, b.take)
}

// take claims one job (runDue: a compare-and-swap on attempts that also
// pushes its due time past the backoff, so a crash retries it) and runs it.
func (b *VariationBuilder) take(ctx context.Context, r variationJobRow) (ok bool, err error) {
	cc := CollectorConfig{RetryMin: b.cfg.RetryMin, RetryMax: b.cfg.RetryMax}.withDefaults()
	j := dueJob{model: (*variationJobRow)(nil), what: "variation job", retryMin: cc.RetryMin, retryMax: cc.RetryMax, failed: &b.failed}
	start := time.Now()
	defer func() { b.rest(ctx, time.Since(start)) }()
	return runDue(ctx, b.db, j, r.ID, r.Attempts, func() error {
		_, err := b.BuildImage(ctx, r.User, r.Identifier)
		return err
	})
}

// BuildImage builds and stores the variations of one image that has none
// yet, and returns what it added (nothing for an image that is gone, wants
// none, or has them already).
func (b *VariationBuilder) BuildImage(ctx context.Context, user, id string) (BuildResult, error) {
	img, err := b.db.Image(ctx, user, id)
	if errors.Is(err, ErrNotExist) {
		return BuildResult{}, nil
	}
	if err != nil {
		return BuildResult{}, err
	}
	if have, err := b.db.Variations(ctx, img); err != nil || len(have) > 0 {
		return BuildResult{}, err
	}
	if !b.cfg.Wants(img.Width, img.Height, img.Size) {
		return BuildResult{}, nil
	}
	src, err := b.blobs.Get(ctx, img.Key())
	if errors.Is(err, ErrNotExist) {
		return BuildResult{}, nil // deleted meanwhile
	}
	if err != nil {
		return BuildResult{}, fmt.Errorf("storage: variations of %s/%s: %w", user, id, err)
	}
	built, err := b.build(ctx, src, b.cfg.Ladder())
	if err != nil {
		return BuildResult{}, fmt.Errorf("storage: variations of %s/%s: %w", user, id, err)
	}
	if len(built) == 0 {
		return BuildResult{}, nil
	}
	if err := b.store(ctx, img, built); errors.Is(err, errImageGone) {
		return BuildResult{}, nil
	} else if err != nil {
		return BuildResult{}, err
	}
	r := BuildResult{Variations: len(built)}
	for _, v := range built {
		r.Bytes += int64(len(v.Data))
	}
	return r, nil
}

// BuildResult is what BuildImage added.
type BuildResult struct {
	Variations int
	Bytes      int64
}

// store writes the blobs of built under reservations, then commits their
// rows in one transaction that claims the reservations, provided the image
// is still the same upload; otherwise the blobs are released and the error
// is errImageGone.
func (b *VariationBuilder) store(ctx context.Context, img Image, built []BuiltVariation) (err error) {
	var reserved []Reservation
	defer func() {
		if err != nil {
			for _, r := range reserved {
				err = errors.Join(err, b.db.Release(context.WithoutCancel(ctx), r))
			}
		}
	}()
	rows := make([]variationRow, len(built))
	t := time.Now().UnixMicro()
	for i, v := range built {
		key := VariationKey(img.User, img.Identifier, img.BlobToken, v.Width, v.Ext)
		r, err := b.db.Reserve(ctx, key)
		if err != nil {
			return err
		}
		reserved = append(reserved, r)
		if err := b.blobs.Put(ctx, key, v.Data); err != nil {
			return fmt.Errorf("storage: write variation %s: %w", key, err)
		}
		rows[i] = variationRow{User: img.User, Identifier: img.Identifier, Width: v.Width, Height: v.Height,
			OrigWidth: v.OrigWidth, OrigHeight: v.OrigHeight, Ext: v.Ext, Size: int64(len(v.Data)),
			BlobToken: img.BlobToken, Created: t}
	}
	err = b.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var token string
		err := b.db.forUpdate(tx.NewSelect().Model((*imageRow)(nil)).Column("blob_token").
			Where("user_name = ? AND identifier = ?", img.User, img.Identifier)).Scan(ctx, &token)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && token != img.BlobToken) {
			return errImageGone
		}
		if err != nil {
			return err
		}
		for _, r := range reserved {
			if err := b.db.claim(ctx, tx, r); err != nil {
				return err
			}
		}
		_, err = b.db.insertIgnore(tx.NewInsert().Model(&rows), "width").Exec(ctx)
		return err
	})
	if errors.Is(err, errImageGone) {
		for _, r := range reserved {
			if rerr := b.db.Release(ctx, r); rerr != nil {
				return rerr
			}
		}
		return errImageGone
	}
	if errors.Is(err, ErrReservationLost) {
		for _, r := range reserved {
			err = errors.Join(err, b.db.requeue(ctx, r))
		}
		reserved = nil
	}
	if err != nil {
		return fmt.Errorf("storage: commit variations of %s/%s: %w", img.User, img.Identifier, err)
	}
	b.built.Add(1)
	return nil
}

// errImageGone: the image was deleted (or replaced) while its variations
// were built.
var errImageGone = errors.New("image gone")

// VariationCandidates returns up to limit images after (afterUser,
// afterID) in (user, identifier) order that have no stored variation, of
// user only when user is set: what `vitrine variations` walks.
func (db *DB) VariationCandidates(ctx context.Context, user, afterUser, afterID string, limit int) ([]Image, error) {
	var rows []imageRow
	q := db.bun.NewSelect().Model(&rows).
		Where("NOT EXISTS (SELECT 1 FROM variations v WHERE v.user_name = image_row.user_name AND v.identifier = image_row.identifier)").
		Where("(user_name > ? OR (user_name = ? AND identifier > ?))", afterUser, afterUser, afterID).
		Order("user_name", "identifier").Limit(int64(limit))
	if user != "" {
		q = q.Where("user_name = ?", user)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: images without variations: %w", err)
	}
	out := make([]Image, len(rows))
	for i := range rows {
		out[i] = rows[i].image()
	}
	return out, nil
}

// CountVariationCandidates counts the images VariationCandidates walks.
func (db *DB) CountVariationCandidates(ctx context.Context, user string) (int64, error) {
	q := db.bun.NewSelect().Model((*imageRow)(nil)).
		Where("NOT EXISTS (SELECT 1 FROM variations v WHERE v.user_name = image_row.user_name AND v.identifier = image_row.identifier)")
	if user != "" {
		q = q.Where("user_name = ?", user)
	}
	n, err := q.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("storage: count images without variations: %w", err)
	}
	return int64(n), nil
}
