package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// imageRow is the images table.
type imageRow struct {
	bun.BaseModel `bun:"table:images"`

	User             string         `bun:"user_name,pk"`
	Identifier       string         `bun:"identifier,pk"`
	Size             int64          `bun:"size"`
	Extension        string         `bun:"extension"`
	Mime             string         `bun:"mime"`
	Width            int            `bun:"width"`
	Height           int            `bun:"height"`
	Frames           int            `bun:"frames"`
	Checksum         string         `bun:"checksum"`
	OriginalChecksum sql.NullString `bun:"original_checksum"`
	Added            int64          `bun:"added"`
	Updated          int64          `bun:"updated"`
	Version          int64          `bun:"version"`
	Inserted         int64          `bun:"inserted"`
	BlobToken        string         `bun:"blob_token"`
	// The video columns are NULL for an image (step 28).
	VideoDuration sql.NullFloat64 `bun:"video_duration"`
	VideoFPS      sql.NullFloat64 `bun:"video_fps"`
	VideoCodec    sql.NullString  `bun:"video_codec"`
}

func (r *imageRow) image() Image {
	return Image{
		User:             r.User,
		Identifier:       r.Identifier,
		Size:             r.Size,
		Extension:        r.Extension,
		Mime:             r.Mime,
		Width:            r.Width,
		Height:           r.Height,
		Frames:           r.Frames,
		Checksum:         r.Checksum,
		OriginalChecksum: r.OriginalChecksum.String,
		Added:            fromMicros(r.Added),
		Updated:          fromMicros(r.Updated),
		Version:          r.Version,
		BlobToken:        r.BlobToken,
		Video:            r.video(),
	}
}

func (r *imageRow) video() *Video {
	if !r.VideoCodec.Valid {
		return nil
	}
	return &Video{Duration: r.VideoDuration.Float64, FPS: r.VideoFPS.Float64, Codec: r.VideoCodec.String}
}

// toMicros stores a record time: UTC, whole seconds.
func toMicros(t time.Time) int64 { return t.Truncate(time.Second).UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// now is the current time as stored.
func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func validateImage(img *Image) error {
	for _, c := range []struct {
		what, v  string
		max      int
		required bool
	}{
		{"user", img.User, maxName, true},
		{"image identifier", img.Identifier, maxName, true},
		{"extension", img.Extension, maxExtension, false},
		{"mime type", img.Mime, maxName, false},
		{"checksum", img.Checksum, maxChecksum, false},
		{"original checksum", img.OriginalChecksum, maxChecksum, false},
	} {
		if err := checkLen(c.what, c.v, c.max, c.required); err != nil {
			return err
		}
	}
	return nil
}

// InsertImage adds img with no reservation and no variation job: for
// images whose blob is written by other means (tests, imports); see
// CommitImage.
func (db *DB) InsertImage(ctx context.Context, img *Image) (created bool, err error) {
	return db.CommitImage(ctx, img, Reservation{}, false)
}

// CommitImage adds img, whose blob was written at res.Key (reserved with
// Reserve before the write), claiming res in the same transaction; with
// img.Metadata set, the metadata is stored in it too. A zero Added becomes
// now and a zero Updated becomes Added; both are stored UTC in whole
// seconds and written back to img, and so is the new Version.
//
// When (img.User, img.Identifier) already exists nothing is written: res is
// released (its blob is not needed), img is overwritten with the stored
// record and created is false. With variations, a new image gets a
// variation job in the same transaction (the caller decides which images
// get stored variations; DrainVariationJobs). Concurrent commits of one
// image leave one row and report created once. When a collector took res
// first (the write overran its lease), nothing is written and the error
// is ErrReservationLost.
//
// With img.UploadToken set, the commit spends one of the token's uses in
// the same transaction, whether it adds the image or finds it
// stored: with no use left (used up, revoked or expired), nothing is
// written and the error is ErrUploadTokenSpent.
//
// When a new image would take its user past a
// quota (quotas.go), nothing is written and the error is a *QuotaError
// (ErrQuotaExceeded); the caller releases res.
func (db *DB) CommitImage(ctx context.Context, img *Image, res Reservation, variations bool) (created bool, err error) {
	if err := validateImage(img); err != nil {
		return false, err
	}
	if img.Added.IsZero() {
		img.Added = now()
	}
	if img.Updated.IsZero() {
		img.Updated = img.Added
	}
	img.Added = img.Added.UTC().Truncate(time.Second)
	img.Updated = img.Updated.UTC().Truncate(time.Second)
	row := &imageRow{
		User:             img.User,
		Identifier:       img.Identifier,
		Size:             img.Size,
		Extension:        img.Extension,
		Mime:             img.Mime,
		Width:            img.Width,
		Height:           img.Height,
		Frames:           img.Frames,
		Checksum:         img.Checksum,
		OriginalChecksum: sql.NullString{String: img.OriginalChecksum, Valid: img.OriginalChecksum != ""},
		Added:            toMicros(img.Added),
		Updated:          toMicros(img.Updated),
		Version:          time.Now().UnixMicro(),
		Inserted:         db.insertedNow(),
		BlobToken:        img.BlobToken,
	}
	if v := img.Video; v != nil {
		row.VideoDuration = sql.NullFloat64{Float64: v.Duration, Valid: true}
		row.VideoFPS = sql.NullFloat64{Float64: v.FPS, Valid: true}
		row.VideoCodec = sql.NullString{String: v.Codec, Valid: true}
	}
	var n int64
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if token := img.UploadToken; token != "" {
			// First, so that the token's row lock orders racing uploads
			// before either inserts anything.
			if err := db.spendUploadToken(ctx, tx, token); err != nil {
				return err
			}
		}
		res2, err := db.insertIgnore(tx.NewInsert().Model(row), "identifier").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err = affected(res2); err != nil {
			return err
		}
		if n == 0 {
			return db.release(ctx, tx, res)
		}
		if err := db.claim(ctx, tx, res); err != nil {
			return err
		}
		return db.recordNewImage(ctx, tx, img, variations)
	})
	if errors.Is(err, ErrReservationLost) {
		err = errors.Join(err, db.requeue(ctx, res))
	}
	if err != nil {
		return false, fmt.Errorf("storage: insert image %s/%s: %w", img.User, img.Identifier, err)
	}
	if n > 0 {
		img.Version = row.Version
		return true, nil
	}
	existing, err := db.Image(ctx, img.User, img.Identifier)
	if err != nil {
		return false, err
	}
	*img = existing
	return false, nil
}

// recordNewImage writes, in tx, what goes with a new image row: its
// variation job (with variations), metadata, properties, the audit entry
// (and event; naming img.UploadToken when set) and the user's counts, and
// checks the user's quotas;
// ErrErasing while the user is being erased.
func (db *DB) recordNewImage(ctx context.Context, tx bun.Tx, img *Image, variations bool) error {
	if variations {
		if err := db.addVariationJob(ctx, tx, img.User, img.Identifier); err != nil {
			return err
		}
	}
	if len(img.Metadata) > 0 {
		if err := db.writeMetadata(ctx, tx, img.User, img.Identifier, img.Metadata, true); err != nil {
			return err
		}
	}
	if img.Properties != nil {
		if err := db.writeProperties(ctx, tx, img.User, img.Identifier, img.Properties, true); err != nil {
			return err
		}
	}
	detail := map[string]any{"bytes": img.Size, "mime": img.Mime, "width": img.Width, "height": img.Height}
	if img.Source != "" {
		detail["source"] = clip(img.Source, 2048)
	}
	if img.UploadToken != "" {
		detail["uploadToken"] = img.UploadToken
	}
	if err := db.auditWith(ctx, tx, auditEvent{"image.create", img.User + "/" + img.Identifier, detail}, imageData(img)); err != nil {
		return err
	}
	// Last, so that the user's row of image_counts, which orders the
	// user's uploads on every instance, is locked for as short a time as
	// may be.
	if err := db.addCount(ctx, tx, img.User, 1, img.Size); err != nil {
		return err
	}
	if err := db.refuseErasing(ctx, tx, img.User); err != nil {
		return err
	}
	return db.enforceQuota(ctx, tx, img.User, img.Size)
}

// Image returns one image's record (without metadata).
func (db *DB) Image(ctx context.Context, user, id string) (Image, error) {
	var row imageRow
	err := db.bun.NewSelect().Model(&row).
		Where("user_name = ? AND identifier = ?", user, id).
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Image{}, fmt.Errorf("storage: image %s/%s: %w", user, id, ErrNotExist)
	}
	if err != nil {
		return Image{}, fmt.Errorf("storage: image %s/%s: %w", user, id, err)
	}
	return row.image(), nil
}

// DeleteImage deletes an image's record, its metadata, its short URLs and
// its cached variants' and stored variations' records in one transaction,
// which also queues the deletion of the image's blob and its variants' and
// variations' blobs (queue.go): the
// blobs go once a collector gets to them, and a failure to delete them is
// retried until it succeeds. ErrNotExist when there is no such image.
func (db *DB) DeleteImage(ctx context.Context, user, id string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var row imageRow
		err := db.forUpdate(tx.NewSelect().Model(&row).Column("size", "blob_token").
			Where("user_name = ? AND identifier = ?", user, id)).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotExist
		}
		if err != nil {
			return err
		}
		if err := deleted(tx.NewDelete().Model((*imageRow)(nil)).
			Where("user_name = ? AND identifier = ?", user, id).Exec(ctx)); err != nil {
			return err
		}
		if err := db.addCount(ctx, tx, user, -1, -row.Size); err != nil {
			return err
		}
		if err := db.audit(ctx, tx, auditEvent{"image.delete", user + "/" + id, map[string]any{"bytes": row.Size}}); err != nil {
			return err
		}
		// The foreign keys cascade too; these deletes keep the behaviour
		// independent of whether a connection enforces them.
		if _, err := tx.NewDelete().Model((*metadataRow)(nil)).
			Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*propertiesRow)(nil)).
			Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*qualityRow)(nil)).
			Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
			return err
		}
		if _, err = tx.NewDelete().Model((*shortURLRow)(nil)).
			Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
			return err
		}
		if err := db.dropVariants(ctx, tx, user, id); err != nil {
			return err
		}
		if err := db.dropVariations(ctx, tx, user, id); err != nil {
			return err
		}
		if row.BlobToken == "" {
			// Variants written before their rows were (before migration
			// step 3) have no row to list them.
			if err := db.enqueue(ctx, tx, []string{VariantPrefix(user, id, "")}, true, time.Now()); err != nil {
				return err
			}
		}
		return db.enqueue(ctx, tx, []string{ImageKey(user, id, row.BlobToken)}, false, time.Now())
	})
	if err != nil {
		return fmt.Errorf("storage: delete image %s/%s: %w", user, id, err)
	}
	return nil
}

// addCount changes a user's row in image_counts (migration step 6) by n
// images and bytes; tx is the transaction that inserts or deletes them.
func (db *DB) addCount(ctx context.Context, tx bun.Tx, user string, n, bytes int64) error {
	q := "INSERT INTO image_counts (user_name, images, bytes) VALUES (?, ?, ?) "
	if db.kind == mysqlKind {
		q += "ON DUPLICATE KEY UPDATE images = images + VALUES(images), bytes = bytes + VALUES(bytes)"
	} else {
		q += "ON CONFLICT (user_name) DO UPDATE SET images = image_counts.images + EXCLUDED.images, bytes = image_counts.bytes + EXCLUDED.bytes"
	}
	if _, err := tx.ExecContext(ctx, q, user, n, bytes); err != nil {
		return fmt.Errorf("count images of %s: %w", user, err)
	}
	return nil
}

// lockImage checks that an image exists inside tx and locks its row until
// tx ends, so that metadata and short URLs cannot be written for an image
// that a concurrent DeleteImage removes.
func (db *DB) lockImage(ctx context.Context, tx bun.Tx, user, id string) error {
	var one int
	err := db.forUpdate(tx.NewSelect().Model((*imageRow)(nil)).ColumnExpr("1").
		Where("user_name = ? AND identifier = ?", user, id)).Scan(ctx, &one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: image %s/%s: %w", user, id, ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("storage: image %s/%s: %w", user, id, err)
	}
	return nil
}

// touchImage sets an image's updated time to now and moves its version on;
// the row must be locked.
func (db *DB) touchImage(ctx context.Context, tx bun.Tx, user, id string) error {
	_, err := tx.NewUpdate().Model((*imageRow)(nil)).
		Set("updated = ?", toMicros(now())).
		Set("version = version + 1").
		Where("user_name = ? AND identifier = ?", user, id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("storage: touch image %s/%s: %w", user, id, err)
	}
	return nil
}

// LastModified returns the latest Updated time of the given users' images
// (every user's when users is empty), or the zero time when there are none.
func (db *DB) LastModified(ctx context.Context, users []string) (time.Time, error) {
	var max sql.NullInt64
	q := db.bun.NewSelect().Model((*imageRow)(nil)).ColumnExpr("MAX(updated)")
	if len(users) > 0 {
		q = q.Where("user_name IN (?)", bun.List(users))
	}
	if err := q.Scan(ctx, &max); err != nil {
		return time.Time{}, fmt.Errorf("storage: last modified: %w", err)
	}
	if !max.Valid {
		return time.Time{}, nil
	}
	return fromMicros(max.Int64), nil
}

// Users returns the users that have images, sorted byte-wise.
func (db *DB) Users(ctx context.Context) ([]string, error) {
	users := []string{}
	err := db.bun.NewSelect().Model((*imageRow)(nil)).Distinct().Column("user_name").
		Order("user_name").Scan(ctx, &users)
	if err != nil {
		return nil, fmt.Errorf("storage: users: %w", err)
	}
	return users, nil
}

// UserStats returns each user's image count and total size, sorted by user.
func (db *DB) UserStats(ctx context.Context) ([]UserStats, error) {
	var rows []struct {
		User   string `bun:"user_name"`
		Images int64  `bun:"images"`
		Bytes  int64  `bun:"bytes"`
	}
	err := db.bun.NewSelect().Model((*imageRow)(nil)).
		ColumnExpr("user_name, COUNT(*) AS images, COALESCE(SUM(size), 0) AS bytes").
		Group("user_name").Order("user_name").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("storage: user stats: %w", err)
	}
	stats := make([]UserStats, len(rows))
	for i, r := range rows {
		stats[i] = UserStats{User: r.User, NumImages: r.Images, NumBytes: r.Bytes}
	}
	return stats, nil
}

// insertedNow is the value of images.inserted for a row inserted now: the
// time in microseconds, and strictly more than the last one this DB wrote,
// so that rows inserted one after the other by this instance keep their
// order even within one microsecond.
func (db *DB) insertedNow() int64 {
	for {
		last, now := db.inserted.Load(), time.Now().UnixMicro()
		if now <= last {
			now = last + 1
		}
		if db.inserted.CompareAndSwap(last, now) {
			return now
		}
	}
}
