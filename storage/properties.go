package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Properties is what analysis learned about an image (migration step 13):
// placeholders, colours and a perceptual hash. They are the service's, not
// the user's: they never mix into the image's metadata.
type Properties struct {
	// BlurHash and ThumbHash are the placeholder strings.
	BlurHash  string
	ThumbHash string
	// AverageColor is "#rrggbb"; Palette holds the dominant colours in the
	// same form, most frequent first.
	AverageColor string
	Palette      []string
	// PHash is the 64-bit perceptual hash; HasPHash is false when none was
	// computed (the image is not searchable by similarity).
	PHash    uint64
	HasPHash bool
	// Analyzed is when the properties were computed (UTC, whole seconds);
	// SetProperties sets it when zero.
	Analyzed time.Time
}

// propertiesRow is the image_properties table.
type propertiesRow struct {
	bun.BaseModel `bun:"table:image_properties"`

	User         string        `bun:"user_name,pk"`
	Identifier   string        `bun:"identifier,pk"`
	BlurHash     string        `bun:"blurhash"`
	ThumbHash    string        `bun:"thumbhash"`
	AverageColor string        `bun:"average_color"`
	Palette      string        `bun:"palette"`
	PHash        sql.NullInt64 `bun:"phash"`
	Analyzed     int64         `bun:"analyzed"`
}

// maxPalette bounds the stored palette (its column is 1024 bytes on MySQL).
const maxPalette = 64

func newPropertiesRow(user, id string, p *Properties) (*propertiesRow, error) {
	if len(p.BlurHash) > 255 || len(p.ThumbHash) > 255 || len(p.AverageColor) > 16 || len(p.Palette) > maxPalette {
		return nil, fmt.Errorf("storage: properties of %s/%s too long: %w", user, id, ErrInvalid)
	}
	if p.Analyzed.IsZero() {
		p.Analyzed = now()
	}
	p.Analyzed = p.Analyzed.UTC().Truncate(time.Second)
	palette := p.Palette
	if palette == nil {
		palette = []string{}
	}
	pal, err := json.Marshal(palette)
	if err != nil {
		return nil, fmt.Errorf("storage: palette of %s/%s: %w", user, id, err)
	}
	return &propertiesRow{
		User: user, Identifier: id, BlurHash: p.BlurHash, ThumbHash: p.ThumbHash,
		AverageColor: p.AverageColor, Palette: string(pal),
		PHash:    sql.NullInt64{Int64: int64(p.PHash), Valid: p.HasPHash},
		Analyzed: toMicros(p.Analyzed),
	}, nil
}

func (r *propertiesRow) properties() (*Properties, error) {
	p := &Properties{
		BlurHash: r.BlurHash, ThumbHash: r.ThumbHash, AverageColor: r.AverageColor,
		PHash: uint64(r.PHash.Int64), HasPHash: r.PHash.Valid, Analyzed: fromMicros(r.Analyzed),
	}
	if err := json.Unmarshal([]byte(r.Palette), &p.Palette); err != nil {
		return nil, fmt.Errorf("storage: palette of %s/%s: %w", r.User, r.Identifier, err)
	}
	return p, nil
}

// writeProperties replaces an image's properties inside tx. fresh says
// the image row was just inserted, so no properties are expected: they
// are inserted without the delete first. Why: on MariaDB a delete that
// finds no row locks the gap where it would be, and two uploads of one
// user doing so at once deadlock on their inserts into it.
func (db *DB) writeProperties(ctx context.Context, tx bun.Tx, user, id string, p *Properties, fresh bool) error {
	row, err := newPropertiesRow(user, id, p)
	if err != nil {
		return err
	}
	if fresh {
		if done, err := insertFresh(ctx, db, tx, row); done || err != nil {
			if err != nil {
				return fmt.Errorf("storage: write properties of %s/%s: %w", user, id, err)
			}
			return nil
		}
	}
	if _, err := tx.NewDelete().Model((*propertiesRow)(nil)).
		Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
		return fmt.Errorf("storage: replace properties of %s/%s: %w", user, id, err)
	}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return fmt.Errorf("storage: write properties of %s/%s: %w", user, id, err)
	}
	return nil
}

// SetProperties stores (or replaces) an image's properties; a missing
// image is ErrNotExist. It leaves the image's version alone: properties
// are derived from the bytes, which do not change.
func (db *DB) SetProperties(ctx context.Context, user, id string, p Properties) error {
	return db.runTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := db.lockImage(ctx, tx, user, id); err != nil {
			return err
		}
		return db.writeProperties(ctx, tx, user, id, &p, false)
	})
}

// Properties returns an image's properties; an image never analysed (or
// missing) is ErrNotExist.
func (db *DB) Properties(ctx context.Context, user, id string) (Properties, error) {
	var row propertiesRow
	err := db.bun.NewSelect().Model(&row).Where("user_name = ? AND identifier = ?", user, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Properties{}, fmt.Errorf("storage: properties of %s/%s: %w", user, id, ErrNotExist)
	}
	if err != nil {
		return Properties{}, fmt.Errorf("storage: properties of %s/%s: %w", user, id, err)
	}
	p, err := row.properties()
	if err != nil {
		return Properties{}, err
	}
	return *p, nil
}

// fillProperties sets Image.Properties of a page's images that have them.
func (db *DB) fillProperties(ctx context.Context, images []Image) error {
	var users, ids []string
	seen := map[string]bool{}
	for _, img := range images {
		if !seen[img.User] {
			seen[img.User] = true
			users = append(users, img.User)
		}
		ids = append(ids, img.Identifier)
	}
	var rows []propertiesRow
	err := db.bun.NewSelect().Model(&rows).
		Where("user_name IN (?) AND identifier IN (?)", bun.List(users), bun.List(ids)).Scan(ctx)
	if err != nil {
		return fmt.Errorf("storage: images properties: %w", err)
	}
	type key struct{ user, id string }
	byKey := make(map[key]*Properties, len(rows))
	for i := range rows {
		p, err := rows[i].properties()
		if err != nil {
			return err
		}
		byKey[key{rows[i].User, rows[i].Identifier}] = p
	}
	for i := range images {
		images[i].Properties = byKey[key{images[i].User, images[i].Identifier}]
	}
	return nil
}

// ImageRef names one image.
type ImageRef struct{ User, Identifier string }

// PendingAnalysis returns up to limit images, in (user, identifier) order
// after the cursor after, that have no properties or whose properties were
// computed before staleBefore (zero: only those with none). user "" means
// every user. A caller that walks the pages with the last image as the
// next cursor visits each pending image once, and a walk interrupted and
// begun again skips what it has already done.
func (db *DB) PendingAnalysis(ctx context.Context, user string, after ImageRef, staleBefore time.Time, limit int) ([]Image, error) {
	var rows []imageRow
	s := db.bun.NewSelect().Model(&rows).
		Where("(user_name > ? OR (user_name = ? AND identifier > ?))", after.User, after.User, after.Identifier)
	if user != "" {
		s = s.Where("user_name = ?", user)
	}
	sub := "SELECT 1 FROM image_properties AS p WHERE p.user_name = image_row.user_name AND p.identifier = image_row.identifier"
	if staleBefore.IsZero() {
		s = s.Where("NOT EXISTS (" + sub + ")")
	} else {
		s = s.Where("NOT EXISTS ("+sub+" AND p.analyzed >= ?)", toMicros(staleBefore))
	}
	if err := s.OrderExpr("user_name ASC, identifier ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: images pending analysis: %w", err)
	}
	out := make([]Image, len(rows))
	for i := range rows {
		out[i] = rows[i].image()
	}
	return out, nil
}
