package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// QualityAnswer is one auto-quality decision stored with an image
// (migration steps 23 and 26): for an output format and size class, the
// quality that met the target score, with the score and size of that
// output; Key names the definition of a relative target ("" for a fixed
// score).
type QualityAnswer struct {
	Format  string
	Class   int
	Target  float64
	Key     string
	Quality int
	Score   float64
	Bytes   int
}

// qualityRow is the image_qualities table.
type qualityRow struct {
	bun.BaseModel `bun:"table:image_qualities"`

	User       string  `bun:"user_name,pk"`
	Identifier string  `bun:"identifier,pk"`
	Format     string  `bun:"format,pk"`
	Class      int     `bun:"size_class,pk"`
	Target     float64 `bun:"target"`
	Key        string  `bun:"target_key"`
	Quality    int     `bun:"quality"`
	Score      float64 `bun:"score"`
	Bytes      int64   `bun:"bytes"`
	Updated    int64   `bun:"updated"`
}

// Qualities returns the auto-quality answers stored for an image (none for
// a missing image).
func (db *DB) Qualities(ctx context.Context, user, id string) ([]QualityAnswer, error) {
	var rows []qualityRow
	if err := db.bun.NewSelect().Model(&rows).Where("user_name = ? AND identifier = ?", user, id).
		Order("format", "size_class").Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: qualities of %s/%s: %w", user, id, err)
	}
	out := make([]QualityAnswer, len(rows))
	for i, r := range rows {
		out[i] = QualityAnswer{Format: r.Format, Class: r.Class, Target: r.Target, Key: r.Key, Quality: r.Quality, Score: r.Score, Bytes: int(r.Bytes)}
	}
	return out, nil
}

// SetQuality stores an auto-quality answer for an image, replacing the one
// for the same format and size class. ErrNotExist when the image is gone;
// ErrInvalid for a format name longer than 16 bytes or a target key longer
// than 64.
func (db *DB) SetQuality(ctx context.Context, user, id string, a QualityAnswer) error {
	if a.Format == "" || len(a.Format) > 16 {
		return fmt.Errorf("storage: quality of %s/%s: format %q: %w", user, id, a.Format, ErrInvalid)
	}
	if len(a.Key) > 64 {
		return fmt.Errorf("storage: quality of %s/%s: target key %q: %w", user, id, a.Key, ErrInvalid)
	}
	return db.runTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := db.lockImage(ctx, tx, user, id); err != nil {
			return err
		}
		row := &qualityRow{User: user, Identifier: id, Format: a.Format, Class: a.Class, Target: a.Target, Key: a.Key,
			Quality: a.Quality, Score: a.Score, Bytes: int64(a.Bytes), Updated: toMicros(now())}
		if _, err := tx.NewDelete().Model((*qualityRow)(nil)).
			Where("user_name = ? AND identifier = ? AND format = ? AND size_class = ?", user, id, a.Format, a.Class).Exec(ctx); err != nil {
			return fmt.Errorf("storage: quality of %s/%s: %w", user, id, err)
		}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return fmt.Errorf("storage: quality of %s/%s: %w", user, id, err)
		}
		return nil
	})
}
