package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// DrainVariationJobs takes the variation jobs due now, up to p.Limit, and
// hands each one's image to build (the caller's policy: what to build, and
// how; StoreVariations commits what it built). A job whose build returns
// nil is finished; one that fails is tried again after p's backoff (and
// its error kept in last_error), and the others go on. Each job is taken
// by a compare-and-swap on its attempts that also pushes its due time past
// the backoff, so two instances never take one job at once, and the job of
// an instance that dies is taken again once its backoff is over. It
// returns how many jobs it finished and the first error.
func (db *DB) DrainVariationJobs(ctx context.Context, p JobPass, build func(ctx context.Context, user, id string) error) (done int, firstErr error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	j := dueJob{model: (*variationJobRow)(nil), what: "variation job", retryMin: p.RetryMin, retryMax: p.RetryMax}
	return drainDue(ctx, db, "variation jobs", 16, p.Limit, func(ctx context.Context, r variationJobRow) (bool, error) {
		return runDue(ctx, db, j, r.ID, r.Attempts, func() error { return build(ctx, r.User, r.Identifier) })
	})
}

// BuiltVariation is one variation of an image, built by the caller of
// StoreVariations.
type BuiltVariation struct {
	Width, Height         int
	OrigWidth, OrigHeight int
	Ext                   string
	Data                  []byte
}

// StoreVariations writes the blobs of built, variations of img, under
// reservations, then commits their rows in one transaction that claims the
// reservations, provided the image is still the same upload (its row and
// blob token). stored is false, and the blobs are released, when the image
// was deleted or replaced meanwhile; a build that never commits leaves
// nothing behind.
func (db *DB) StoreVariations(ctx context.Context, blobs *Blobs, img Image, built []BuiltVariation) (stored bool, err error) {
	err = db.storeVariations(ctx, blobs, img, built)
	if errors.Is(err, errImageGone) {
		return false, nil
	}
	return err == nil, err
}

// storeVariations is StoreVariations; errImageGone when the image is no
// longer the one built from.
func (db *DB) storeVariations(ctx context.Context, blobs *Blobs, img Image, built []BuiltVariation) (err error) {
	var reserved []Reservation
	defer func() {
		if err != nil {
			for _, r := range reserved {
				err = errors.Join(err, db.Release(context.WithoutCancel(ctx), r))
			}
		}
	}()
	rows := make([]variationRow, len(built))
	t := time.Now().UnixMicro()
	for i, v := range built {
		key := VariationKey(img.User, img.Identifier, img.BlobToken, v.Width, v.Ext)
		r, err := db.Reserve(ctx, key)
		if err != nil {
			return err
		}
		reserved = append(reserved, r)
		if err := blobs.Put(ctx, key, v.Data); err != nil {
			return fmt.Errorf("storage: write variation %s: %w", key, err)
		}
		rows[i] = variationRow{User: img.User, Identifier: img.Identifier, Width: v.Width, Height: v.Height,
			OrigWidth: v.OrigWidth, OrigHeight: v.OrigHeight, Ext: v.Ext, Size: int64(len(v.Data)),
			BlobToken: img.BlobToken, Created: t}
	}
	err = db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var token string
		err := db.forUpdate(tx.NewSelect().Model((*imageRow)(nil)).Column("blob_token").
			Where("user_name = ? AND identifier = ?", img.User, img.Identifier)).Scan(ctx, &token)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && token != img.BlobToken) {
			return errImageGone
		}
		if err != nil {
			return err
		}
		for _, r := range reserved {
			if err := db.claim(ctx, tx, r); err != nil {
				return err
			}
		}
		_, err = db.insertIgnore(tx.NewInsert().Model(&rows), "width").Exec(ctx)
		return err
	})
	if errors.Is(err, errImageGone) {
		for _, r := range reserved {
			if rerr := db.Release(ctx, r); rerr != nil {
				return rerr
			}
		}
		return errImageGone
	}
	if errors.Is(err, ErrReservationLost) {
		for _, r := range reserved {
			err = errors.Join(err, db.requeue(ctx, r))
		}
		reserved = nil
	}
	if err != nil {
		return fmt.Errorf("storage: commit variations of %s/%s: %w", img.User, img.Identifier, err)
	}
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
