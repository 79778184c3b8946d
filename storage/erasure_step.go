package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/uptrace/bun"
)

// ErasurePass bounds one step of an erasure (EraseStep).
type ErasurePass struct {
	// Batch is how many images one step erases, in one transaction.
	Batch int
	// Lease is how long a taken erasure stays hidden from the other
	// instances: longer than a step takes. A step whose erasure another
	// instance took meanwhile (it overran its lease) commits nothing.
	Lease time.Duration
	// Wait is how long an erasure whose blobs are still in the store (or
	// queued for deletion) rests before it is looked at again.
	Wait time.Duration
	// Settle is the least time from the request to the final step: what
	// the instances counted in memory of the user before the erasure (the
	// per-day usage counters) is written within it, and then erased.
	Settle time.Duration
	// RetryMin is the wait after a first failed step; each further
	// failure doubles it, up to RetryMax.
	RetryMin, RetryMax time.Duration
}

// Validate reports a Batch under 1, a Lease, Wait or RetryMin that is not
// positive, a negative Settle, or RetryMax under RetryMin.
func (p ErasurePass) Validate() error {
	if p.Batch < 1 || p.Lease <= 0 || p.Wait <= 0 || p.Settle < 0 || p.RetryMin <= 0 || p.RetryMax < p.RetryMin {
		return fmt.Errorf("storage: erasure pass %+v: want Batch >= 1, Lease, Wait and RetryMin > 0, Settle >= 0, RetryMax >= RetryMin: %w", p, ErrInvalid)
	}
	return nil
}

// ErasureStep is what one EraseStep did.
type ErasureStep struct {
	Erasure int64
	User    string
	// Phase is the phase the step worked in (images or blobs).
	Phase string
	// Images is how many images the step erased.
	Images int
	// Waiting is set when the step found the user's blobs not yet all
	// deleted, or the erasure too young to finish (ErasurePass.Settle).
	Waiting bool
	// Done is set when the step finished the erasure.
	Done bool
}

// errErasureLost: another instance took the erasure while this one
// worked on it (this one overran its lease); its step committed nothing.
var errErasureLost = errors.New("storage: erasure taken by another instance")

// EraseStep takes one due erasure (by a compare-and-swap on its claim,
// which also hides it for p.Lease, so that two instances never work on
// one erasure at once and the erasure of an instance that dies is taken
// again once its lease is over) and does its next step:
//
//   - while the user has images: the next p.Batch of them, by identifier,
//     in one transaction: the rows of every image part, the image rows,
//     their blobs queued for deletion, the receipt's items, the user's
//     image count;
//   - when none is left: in the same way, the rows of every image part
//     left without their image;
//   - then, while the store still holds blobs under the user's prefixes
//     or the blob queue still has them, it queues those no row named and
//     waits (p.Wait);
//   - then, once p.Settle has passed since the request, one transaction
//     erases the rows of every user part, writes the receipt's hash, the
//     user.erase audit entry and its event, as done by the actor who asked,
//     and marks the erasure done.
//
// A step that fails commits nothing and is tried again after a backoff
// (p.RetryMin doubling to p.RetryMax). ok is false when no erasure was
// due.
func (db *DB) EraseStep(ctx context.Context, blobs *Blobs, p ErasurePass) (s ErasureStep, ok bool, err error) {
	if err := p.Validate(); err != nil {
		return s, false, err
	}
	var rows []erasureRow
	err = db.bun.NewSelect().Model(&rows).Where("finished = 0 AND due <= ?", time.Now().UnixMicro()).
		OrderExpr("due ASC, id ASC").Limit(8).Scan(ctx)
	if err != nil {
		return s, false, fmt.Errorf("storage: due erasures: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		taken, err := db.takeErasure(ctx, r, p.Lease)
		if err != nil {
			return s, false, err
		}
		if !taken {
			continue
		}
		s, err := db.eraseStep(ctx, blobs, p, r)
		if err != nil && !errors.Is(err, errErasureLost) {
			err = errors.Join(err, db.failErasure(context.WithoutCancel(ctx), r, p, err))
		}
		if err != nil {
			err = fmt.Errorf("storage: erase %s: %w", r.User, err)
		}
		return s, true, err
	}
	return s, false, nil
}

// takeErasure claims r for lease: a compare-and-swap on its claim that
// pushes its due time past the lease and sets its start the first time.
// false when another instance took it first.
func (db *DB) takeErasure(ctx context.Context, r *erasureRow, lease time.Duration) (bool, error) {
	now := time.Now().UnixMicro()
	res, err := db.bun.NewUpdate().Model((*erasureRow)(nil)).
		Set("claim = claim + 1").
		Set("due = ?", now+lease.Microseconds()).
		Set("started = CASE WHEN started = 0 THEN ? ELSE started END", now).
		Where("id = ? AND claim = ? AND finished = 0", r.ID, r.Claim).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("storage: take erasure %d: %w", r.ID, err)
	}
	if n, err := affected(res); err != nil || n == 0 {
		return false, err
	}
	r.Claim++
	if r.Started == 0 {
		r.Started = now
	}
	return true, nil
}

// failErasure records a failed step and sets the erasure's next try
// after the backoff.
func (db *DB) failErasure(ctx context.Context, r *erasureRow, p ErasurePass, cause error) error {
	backoff := retryAfter(p.RetryMin, p.RetryMax, r.Failures)
	msg := cause.Error()
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	_, err := db.bun.NewUpdate().Model((*erasureRow)(nil)).
		Set("failures = failures + 1").Set("last_error = ?", msg).
		Set("due = ?", time.Now().Add(backoff).UnixMicro()).
		Where("id = ? AND claim = ?", r.ID, r.Claim).Exec(ctx)
	if err != nil {
		return fmt.Errorf("storage: record failed erasure step: %w", err)
	}
	return nil
}

// fence writes r's columns in tx, provided r is still this instance's
// claim (errErasureLost otherwise, and the step rolls back). A step that
// commits clears the failure count.
func fence(ctx context.Context, tx bun.Tx, r *erasureRow, columns ...string) error {
	r.Failures, r.LastError = 0, ""
	columns = append(columns, "failures", "last_error")
	res, err := tx.NewUpdate().Model(r).Column(columns...).WherePK().Where("claim = ?", r.Claim).Exec(ctx)
	if err != nil {
		return err
	}
	if n, err := affected(res); err != nil || n == 0 {
		return errors.Join(err, errErasureLost)
	}
	return nil
}

// eraseStep does r's next step.
func (db *DB) eraseStep(ctx context.Context, blobs *Blobs, p ErasurePass, r *erasureRow) (ErasureStep, error) {
	s := ErasureStep{Erasure: r.ID, User: r.User, Phase: r.Phase}
	counts, err := r.counts()
	if err != nil {
		return s, err
	}
	if r.Phase == phaseImages {
		err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			n, err := db.eraseImages(ctx, tx, r, p.Batch, counts)
			if err != nil {
				return err
			}
			s.Images = n
			if n == 0 {
				for _, part := range imageParts {
					k, err := part.erase(ctx, db, tx, r.User, nil)
					if err != nil {
						return err
					}
					counts[part.kind] += k
				}
				r.Phase = phaseBlobs
			}
			r.Counts, r.Due = encodeCounts(counts), time.Now().UnixMicro()
			return fence(ctx, tx, r, "phase", "counts", "due")
		})
		return s, err
	}
	left, err := db.userBlobsLeft(ctx, blobs, r, counts)
	if err != nil {
		return s, err
	}
	due := time.Now().Add(p.Wait)
	if settled := time.UnixMicro(r.Requested).Add(p.Settle); left == 0 && time.Now().Before(settled) {
		left, due = -1, settled
	}
	if left != 0 {
		s.Waiting = true
		r.Counts, r.Due = encodeCounts(counts), due.UnixMicro()
		return s, db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return fence(ctx, tx, r, "counts", "due")
		})
	}
	done, err := db.finishErasure(ctx, r, counts)
	s.Done = done
	return s, err
}

func encodeCounts(c map[string]int64) string {
	b, _ := json.Marshal(c) // a map of numbers never fails
	return string(b)
}

// eraseImages erases up to limit of r's user's images, by identifier, in
// tx (see EraseStep) and adds what went to counts; it returns how many
// images went.
func (db *DB) eraseImages(ctx context.Context, tx bun.Tx, r *erasureRow, limit int, counts map[string]int64) (int, error) {
	var rows []imageRow
	err := db.forUpdate(tx.NewSelect().Model(&rows).Where("user_name = ?", r.User).
		Order("identifier").Limit(int64(limit))).Scan(ctx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	ids := make([]string, len(rows))
	keys := make([]string, 0, len(rows))
	var prefixes []string
	items := make([]erasureItemRow, len(rows))
	var bytes int64
	for i, img := range rows {
		ids[i] = img.Identifier
		keys = append(keys, ImageKey(img.User, img.Identifier, img.BlobToken))
		if img.BlobToken == "" {
			// Variants written before their rows were (before migration
			// step 3) have no row to list them.
			prefixes = append(prefixes, VariantPrefix(img.User, img.Identifier, ""))
		}
		items[i] = erasureItemRow{Erasure: r.ID, Identifier: img.Identifier, Checksum: img.Checksum,
			OriginalChecksum: img.OriginalChecksum.String, Size: img.Size, Extension: img.Extension,
			Width: img.Width, Height: img.Height, Added: img.Added}
		bytes += img.Size
	}
	for _, part := range imageParts {
		n, err := part.erase(ctx, db, tx, r.User, ids)
		if err != nil {
			return 0, err
		}
		counts[part.kind] += n
	}
	if _, err := deleteRows(ctx, tx, "images", r.User, ids); err != nil {
		return 0, err
	}
	if err := db.enqueue(ctx, tx, keys, false, time.Now()); err != nil {
		return 0, err
	}
	if err := db.enqueue(ctx, tx, prefixes, true, time.Now()); err != nil {
		return 0, err
	}
	if _, err := tx.NewInsert().Model(&items).Exec(ctx); err != nil {
		return 0, fmt.Errorf("receipt items: %w", err)
	}
	if err := db.addCount(ctx, tx, r.User, -int64(len(rows)), -bytes); err != nil {
		return 0, err
	}
	counts["images"] += int64(len(rows))
	counts["imageBytes"] += bytes
	return len(rows), nil
}

// maxStrayBlobs bounds the blobs one step lists and queues.
const maxStrayBlobs = 1000

// userBlobsLeft counts the blobs of r's user still queued for deletion
// and still in the store; the latter that no queue row names are queued
// now (strayBlobs in counts: a write whose reservation was collected
// before the blob landed).
func (db *DB) userBlobsLeft(ctx context.Context, blobs *Blobs, r *erasureRow, counts map[string]int64) (int64, error) {
	q := db.bun.NewSelect().Model((*queueRow)(nil))
	prefixes := userPrefixes(r.User)
	q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		for _, p := range prefixes {
			q = q.WhereOr("blob_key LIKE ? ESCAPE '!'", likePrefix(p))
		}
		return q
	})
	queued, err := q.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("queued blobs: %w", err)
	}
	var listed []string
	errEnough := errors.New("enough")
	for _, p := range prefixes {
		err := blobs.List(ctx, p, func(b BlobInfo) error {
			listed = append(listed, b.Key)
			if len(listed) >= maxStrayBlobs {
				return errEnough
			}
			return nil
		})
		if errors.Is(err, errEnough) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	known, err := db.Queued(ctx, listed)
	if err != nil {
		return 0, err
	}
	var stray []string
	for _, k := range listed {
		if known[k] {
			continue
		}
		// Why look again: the collector may have deleted a queued blob
		// (and its row) between the listing and Queued; only a blob still
		// there that no row names is stray.
		there, err := blobs.Exists(ctx, k)
		if err != nil {
			return 0, err
		}
		if there {
			stray = append(stray, k)
		}
	}
	if err := db.enqueue(ctx, db.bun, stray, false, time.Now()); err != nil {
		return 0, err
	}
	counts["strayBlobs"] += int64(len(stray))
	return int64(queued) + int64(len(listed)), nil
}

// finishErasure is the final step of r: every user part erased, the
// receipt's hash, the audit entry and event, the erasure done; all in one
// transaction, as done by the actor who asked. done is false, and the
// erasure goes back to its images, when an image of the user is found (a
// safety net: new images are refused meanwhile).
func (db *DB) finishErasure(ctx context.Context, r *erasureRow, counts map[string]int64) (done bool, err error) {
	ctx = WithActor(ctx, Actor{Key: r.Actor, Addr: r.Addr})
	start := maps.Clone(counts)
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// A retried transaction counts from where the erasure stood.
		done = false
		clear(counts)
		maps.Copy(counts, start)
		// The user's image count row first, as a new image takes it.
		var one []int
		if err := db.forUpdate(tx.NewSelect().Table("image_counts").ColumnExpr("1").
			Where("user_name = ?", r.User)).Scan(ctx, &one); err != nil {
			return err
		}
		n, err := countRows("images")(ctx, db, tx, r.User)
		if err != nil {
			return err
		}
		if n > 0 {
			r.Phase, r.Due = phaseImages, time.Now().UnixMicro()
			return fence(ctx, tx, r, "phase", "due")
		}
		for _, part := range userParts {
			k, err := part.erase(ctx, db, tx, r)
			if err != nil {
				return err
			}
			counts[part.kind] += k
		}
		r.Finished, r.Phase, r.Counts, r.Active = time.Now().UnixMicro(), phaseDone, encodeCounts(counts), sql.NullString{}
		if r.ReceiptSHA256, err = receiptHash(ctx, tx, r); err != nil {
			return err
		}
		if err := fence(ctx, tx, r, "finished", "phase", "counts", "active", "receipt_sha256"); err != nil {
			return err
		}
		done = true
		stamp := func(v int64) string { return time.UnixMicro(v).UTC().Format(time.RFC3339Nano) }
		return db.audit(ctx, tx, auditEvent{"user.erase", r.User, map[string]any{
			"erasure": r.ID, "counts": counts, "requested": stamp(r.Requested), "started": stamp(r.Started),
			"finished": stamp(r.Finished), "receiptSha256": r.ReceiptSHA256}})
	})
	return done, err
}
