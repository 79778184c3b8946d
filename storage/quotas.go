package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/uptrace/bun"
)

// Quotas bound what one user stores (api/README.md, Quotas); 0 is unlimited. The
// configuration's `quotas` section holds the defaults every user has
// (SetQuotas); a user's own row (SetQuota) overrides any of them.
//
// What counts against Images and Bytes is the user's row of image_counts,
// written in the transaction of every image added or deleted; CommitImage
// checks it in that transaction, under the row's lock, so uploads racing
// on any number of instances never take the user past a quota.
type Quotas struct {
	// Images caps the number of a user's images.
	Images int64 `yaml:"images"`
	// Bytes caps the total size of a user's originals; stored variations
	// and cached variants do not count.
	Bytes int64 `yaml:"bytes"`
	// VariantsPerImage caps the distinct cached variants of one image
	// (transformation chain and format); a render past it is answered but
	// not cached.
	VariantsPerImage int64 `yaml:"variantsPerImage"`
}

// Validate reports a negative quota.
func (q Quotas) Validate() error {
	if q.Images < 0 || q.Bytes < 0 || q.VariantsPerImage < 0 {
		return fmt.Errorf("storage: quotas.images, quotas.bytes and quotas.variantsPerImage must not be negative (0 is unlimited): %w", ErrInvalid)
	}
	return nil
}

// QuotaOverride is a user's own quotas: a nil field takes the default,
// a zero one is unlimited.
type QuotaOverride struct {
	Images, Bytes, VariantsPerImage *int64
}

// IsZero reports whether o overrides nothing.
func (o QuotaOverride) IsZero() bool {
	return o.Images == nil && o.Bytes == nil && o.VariantsPerImage == nil
}

// apply returns defaults with o's values where o sets them.
func (o QuotaOverride) apply(defaults Quotas) Quotas {
	q := defaults
	for _, f := range []struct {
		dst *int64
		src *int64
	}{{&q.Images, o.Images}, {&q.Bytes, o.Bytes}, {&q.VariantsPerImage, o.VariantsPerImage}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return q
}

// QuotaUsage is what a user stores. Images and Bytes count against the
// quotas; variants and variations are shown beside them.
type QuotaUsage struct {
	Images, Bytes int64
	// Variants and VariantBytes are the user's cached variants;
	// MaxVariantsPerImage is the most any one image has.
	Variants, VariantBytes, MaxVariantsPerImage int64
	// Variations and VariationBytes are the user's stored variations.
	Variations, VariationBytes int64
}

// UserQuota is one user's quotas and usage.
type UserQuota struct {
	User string
	// Limits are the quotas in force: the override's where it sets one,
	// else the default.
	Limits   Quotas
	Defaults Quotas
	Override QuotaOverride
	// Updated is when the override last changed; zero when there is none.
	Updated time.Time
	Usage   QuotaUsage
}

// quotaRow is the quotas table (migration step 20).
type quotaRow struct {
	bun.BaseModel `bun:"table:quotas"`

	User             string        `bun:"user_name,pk"`
	Images           sql.NullInt64 `bun:"images"`
	Bytes            sql.NullInt64 `bun:"bytes"`
	VariantsPerImage sql.NullInt64 `bun:"variants_per_image"`
	Updated          int64         `bun:"updated"`
}

func nullable(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

func pointer(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

func (r *quotaRow) override() QuotaOverride {
	return QuotaOverride{Images: pointer(r.Images), Bytes: pointer(r.Bytes), VariantsPerImage: pointer(r.VariantsPerImage)}
}

// QuotaErrorCode is the service error code of an upload refused by a
// quota (api/README.md, The API).
const QuotaErrorCode = 210

// ErrQuotaExceeded: a change would take a user past a quota (403). Every
// *QuotaError is one.
var ErrQuotaExceeded = &Error{"storage: quota exceeded", http.StatusForbidden, "Quota exceeded"}

// QuotaError says which quota a change would exceed, with the user's usage
// before it and the limit; its public message names all three.
type QuotaError struct {
	User string
	// Quota is "images", "bytes" or "variantsPerImage".
	Quota string
	// Usage is what the user (for variantsPerImage, the image) has;
	// Adding what the change would add to it.
	Usage, Adding, Limit int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("storage: quota %s of %s exceeded: %d + %d over %d", e.Quota, e.User, e.Usage, e.Adding, e.Limit)
}

// Is makes every QuotaError match ErrQuotaExceeded.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// HTTPStatus is 403: the request is understood and refused.
func (e *QuotaError) HTTPStatus() int { return http.StatusForbidden }

// ErrorCode is QuotaErrorCode.
func (e *QuotaError) ErrorCode() int { return QuotaErrorCode }

// PublicMessage names the quota (its configuration key), the usage and the
// limit.
func (e *QuotaError) PublicMessage() string {
	switch e.Quota {
	case "bytes":
		return fmt.Sprintf("Quota exceeded: %d bytes of %d stored, and the image has %d (quotas.bytes)", e.Usage, e.Limit, e.Adding)
	case "variantsPerImage":
		return fmt.Sprintf("Quota exceeded: %d variants of %d cached for the image (quotas.variantsPerImage)", e.Usage, e.Limit)
	}
	return fmt.Sprintf("Quota exceeded: %d images of %d (quotas.images)", e.Usage, e.Limit)
}

// SetQuotas sets the default quotas (the configuration's `quotas`); call
// it before the DB is used. The zero value, the default, is unlimited.
func (db *DB) SetQuotas(q Quotas) { db.quotas.Store(&q) }

// QuotaDefaults returns the default quotas.
func (db *DB) QuotaDefaults() Quotas {
	if q := db.quotas.Load(); q != nil {
		return *q
	}
	return Quotas{}
}

// quotaState is a user's quotas in force and the image_counts row as idb
// reads it.
func (db *DB) quotaState(ctx context.Context, idb bun.IDB, user string) (Quotas, QuotaOverride, int64, int64, error) {
	var (
		images, bytes int64
		row           quotaRow
	)
	// One statement for both rows, from a one-row table of the user so
	// that either may be missing.
	err := idb.QueryRowContext(ctx, `SELECT COALESCE(c.images, 0), COALESCE(c.bytes, 0), q.images, q.bytes, q.variants_per_image
		FROM (SELECT ? AS user_name) AS u
		LEFT JOIN image_counts AS c ON c.user_name = u.user_name
		LEFT JOIN quotas AS q ON q.user_name = u.user_name`, user).
		Scan(&images, &bytes, &row.Images, &row.Bytes, &row.VariantsPerImage)
	if err != nil {
		return Quotas{}, QuotaOverride{}, 0, 0, fmt.Errorf("quota of %s: %w", user, err)
	}
	o := row.override()
	return o.apply(db.QuotaDefaults()), o, images, bytes, nil
}

// CheckQuota reports, as a *QuotaError, whether one more image of size
// bytes would take user past a quota as its usage stands now. It takes no
// lock: it spares an upload that cannot commit the writing of its blob,
// and CommitImage checks again where it counts.
func (db *DB) CheckQuota(ctx context.Context, user string, size int64) error {
	limits, _, images, bytes, err := db.quotaState(ctx, db.bun, user)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return exceeds(user, limits, images, bytes, size)
}

// exceeds is the *QuotaError of one more image of size bytes on top of
// images and bytes, or nil.
func exceeds(user string, limits Quotas, images, bytes, size int64) error {
	if limits.Images > 0 && images+1 > limits.Images {
		return &QuotaError{User: user, Quota: "images", Usage: images, Adding: 1, Limit: limits.Images}
	}
	if limits.Bytes > 0 && bytes+size > limits.Bytes {
		return &QuotaError{User: user, Quota: "bytes", Usage: bytes, Adding: size, Limit: limits.Bytes}
	}
	return nil
}

// enforceQuota checks, in tx, after addCount added an image of size bytes
// to the user's row of image_counts (which holds the row's lock until tx
// ends, and so orders every other change of the user's usage after tx),
// that the user's usage stays within the quotas.
func (db *DB) enforceQuota(ctx context.Context, tx bun.Tx, user string, size int64) error {
	limits, _, images, bytes, err := db.quotaState(ctx, tx, user)
	if err != nil {
		return err
	}
	return exceeds(user, limits, images-1, bytes-size, size)
}

// UserQuota returns user's quotas and usage; a user with nothing stored
// and no override has the defaults and no usage.
func (db *DB) UserQuota(ctx context.Context, user string) (UserQuota, error) {
	if err := checkLen("user", user, maxName, true); err != nil {
		return UserQuota{}, err
	}
	limits, o, images, bytes, err := db.quotaState(ctx, db.bun, user)
	if err != nil {
		return UserQuota{}, fmt.Errorf("storage: %w", err)
	}
	uq := UserQuota{User: user, Limits: limits, Defaults: db.QuotaDefaults(), Override: o,
		Usage: QuotaUsage{Images: images, Bytes: bytes}}
	if !o.IsZero() {
		var updated int64
		if err := db.bun.NewSelect().Model((*quotaRow)(nil)).Column("updated").Where("user_name = ?", user).
			Scan(ctx, &updated); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return UserQuota{}, fmt.Errorf("storage: quota of %s: %w", user, err)
		}
		uq.Updated = time.UnixMicro(updated).UTC()
	}
	u := &uq.Usage
	err = db.bun.NewSelect().Model((*variantRow)(nil)).
		ColumnExpr("COUNT(*), COALESCE(SUM(size), 0)").Where("user_name = ?", user).
		Scan(ctx, &u.Variants, &u.VariantBytes)
	if err != nil {
		return UserQuota{}, fmt.Errorf("storage: variants of %s: %w", user, err)
	}
	if u.Variants > 0 {
		err = db.bun.NewSelect().TableExpr("(?) AS per_image", db.bun.NewSelect().Model((*variantRow)(nil)).
			ColumnExpr("COUNT(*) AS n").Where("user_name = ?", user).Group("identifier")).
			ColumnExpr("COALESCE(MAX(n), 0)").Scan(ctx, &u.MaxVariantsPerImage)
		if err != nil {
			return UserQuota{}, fmt.Errorf("storage: variants of %s: %w", user, err)
		}
	}
	err = db.bun.NewSelect().Model((*variationRow)(nil)).
		ColumnExpr("COUNT(*), COALESCE(SUM(size), 0)").Where("user_name = ?", user).
		Scan(ctx, &u.Variations, &u.VariationBytes)
	if err != nil {
		return UserQuota{}, fmt.Errorf("storage: variations of %s: %w", user, err)
	}
	return uq, nil
}

// SetQuota replaces user's override with o (an o that sets nothing drops
// it: the defaults hold) and returns the user's quotas as they are then.
// A negative value is ErrInvalid. The change is audited (quota.update) in
// its transaction. Lowering a quota under what the user stores removes
// nothing: further uploads are refused until the user is under it.
func (db *DB) SetQuota(ctx context.Context, user string, o QuotaOverride) (UserQuota, error) {
	if err := checkLen("user", user, maxName, true); err != nil {
		return UserQuota{}, err
	}
	detail := map[string]any{}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"images", o.Images}, {"bytes", o.Bytes}, {"variantsPerImage", o.VariantsPerImage}} {
		if f.v != nil && *f.v < 0 {
			return UserQuota{}, fmt.Errorf("storage: quota %s of %s is negative: %w", f.name, user, ErrInvalid)
		}
		detail[f.name] = f.v // nil: the default
	}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if o.IsZero() {
			if _, err := tx.NewDelete().Model((*quotaRow)(nil)).Where("user_name = ?", user).Exec(ctx); err != nil {
				return err
			}
		} else {
			row := &quotaRow{User: user, Images: nullable(o.Images), Bytes: nullable(o.Bytes),
				VariantsPerImage: nullable(o.VariantsPerImage), Updated: time.Now().UnixMicro()}
			q := tx.NewInsert().Model(row)
			if db.kind == mysqlKind {
				q = q.On("DUPLICATE KEY UPDATE").Set("images = VALUES(images)").Set("bytes = VALUES(bytes)").
					Set("variants_per_image = VALUES(variants_per_image)").Set("updated = VALUES(updated)")
			} else {
				q = q.On("CONFLICT (user_name) DO UPDATE").Set("images = EXCLUDED.images").Set("bytes = EXCLUDED.bytes").
					Set("variants_per_image = EXCLUDED.variants_per_image").Set("updated = EXCLUDED.updated")
			}
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return db.audit(ctx, tx, auditEvent{"quota.update", user, detail})
	})
	if err != nil {
		return UserQuota{}, fmt.Errorf("storage: set quota of %s: %w", user, err)
	}
	return db.UserQuota(ctx, user)
}

// variantLimit is the variants-per-image quota in force for user.
func (db *DB) variantLimit(ctx context.Context, idb bun.IDB, user string) (int64, error) {
	var n sql.NullInt64
	err := idb.NewSelect().Model((*quotaRow)(nil)).Column("variants_per_image").Where("user_name = ?", user).Scan(ctx, &n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("quota of %s: %w", user, err)
	}
	if n.Valid {
		return n.Int64, nil
	}
	return db.QuotaDefaults().VariantsPerImage, nil
}

// checkVariantQuota reports, as a *QuotaError, whether caching the variant
// hash of img would take the image past its user's variants-per-image
// quota (a variant already cached under hash takes no new place). Inside
// a transaction that holds img's row, the answer holds until it ends.
func (db *DB) checkVariantQuota(ctx context.Context, idb bun.IDB, img Image, hash string) error {
	limit, err := db.variantLimit(ctx, idb, img.User)
	if err != nil || limit == 0 {
		return err
	}
	n, err := idb.NewSelect().Model((*variantRow)(nil)).
		Where("user_name = ? AND identifier = ? AND hash <> ?", img.User, img.Identifier, hash).Count(ctx)
	if err != nil {
		return fmt.Errorf("variants of %s/%s: %w", img.User, img.Identifier, err)
	}
	if int64(n) >= limit {
		return &QuotaError{User: img.User, Quota: "variantsPerImage", Usage: int64(n), Adding: 1, Limit: limit}
	}
	return nil
}
