package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// shortURLRow is the short_urls table. Lookup is the SHA-256 of the
// (user, image, extension, query) tuple and is unique, because MySQL cannot
// put a unique index on long text columns.
type shortURLRow struct {
	bun.BaseModel `bun:"table:short_urls"`

	ID         string `bun:"id,pk"`
	User       string `bun:"user_name"`
	Identifier string `bun:"identifier"`
	Extension  string `bun:"extension"`
	Query      string `bun:"query_string"`
	Lookup     string `bun:"lookup"`
}

func (r *shortURLRow) shortURL() ShortURL {
	return ShortURL{ID: r.ID, User: r.User, Image: r.Identifier, Extension: r.Extension, Query: r.Query}
}

// shortURLLookup hashes the tuple a short URL stands for.
func shortURLLookup(user, image, ext, query string) string {
	h := sha256.New()
	for _, part := range []string{user, image, ext, query} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// InsertShortURL stores u. ErrExist when u.ID is taken or the same user,
// image, extension and query already have a short URL; ErrNotExist when the
// image does not exist.
func (db *DB) InsertShortURL(ctx context.Context, u ShortURL) error {
	if err := checkLen("short URL id", u.ID, maxShortID, true); err != nil {
		return err
	}
	if err := checkLen("extension", u.Extension, maxExtension, false); err != nil {
		return err
	}
	row := &shortURLRow{
		ID:         u.ID,
		User:       u.User,
		Identifier: u.Image,
		Extension:  u.Extension,
		Query:      u.Query,
		Lookup:     shortURLLookup(u.User, u.Image, u.Extension, u.Query),
	}
	return db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := db.lockImage(ctx, tx, u.User, u.Image); err != nil {
			return err
		}
		res, err := db.insertIgnore(tx.NewInsert().Model(row), "id").Exec(ctx)
		if err != nil {
			return fmt.Errorf("storage: insert short URL %s: %w", u.ID, err)
		}
		n, err := affected(res)
		if err != nil {
			return fmt.Errorf("storage: insert short URL %s: %w", u.ID, err)
		}
		if n == 0 {
			return fmt.Errorf("storage: short URL %s: %w", u.ID, ErrExist)
		}
		return db.audit(ctx, tx, auditEvent{"shorturl.create", u.User + "/" + u.Image,
			map[string]any{"id": u.ID, "extension": u.Extension, "query": u.Query}})
	})
}

// ShortURL returns the short URL with the given id.
func (db *DB) ShortURL(ctx context.Context, id string) (ShortURL, error) {
	var row shortURLRow
	err := db.bun.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return ShortURL{}, fmt.Errorf("storage: short URL %s: %w", id, ErrNotExist)
	}
	if err != nil {
		return ShortURL{}, fmt.Errorf("storage: short URL %s: %w", id, err)
	}
	return row.shortURL(), nil
}

// FindShortURL returns the short URL of an image with the given extension
// and canonical query, if there is one.
func (db *DB) FindShortURL(ctx context.Context, user, image, ext, query string) (ShortURL, error) {
	var row shortURLRow
	err := db.bun.NewSelect().Model(&row).
		Where("lookup = ?", shortURLLookup(user, image, ext, query)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return ShortURL{}, fmt.Errorf("storage: short URL of %s/%s: %w", user, image, ErrNotExist)
	}
	if err != nil {
		return ShortURL{}, fmt.Errorf("storage: short URL of %s/%s: %w", user, image, err)
	}
	return row.shortURL(), nil
}

// ShortURLsOf returns the short URLs of the image user/image, ordered by
// id; none (or no such image) is an empty list.
func (db *DB) ShortURLsOf(ctx context.Context, user, image string) ([]ShortURL, error) {
	var rows []shortURLRow
	err := db.bun.NewSelect().Model(&rows).Where("user_name = ? AND identifier = ?", user, image).
		OrderExpr("id ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: short URLs of %s/%s: %w", user, image, err)
	}
	out := make([]ShortURL, len(rows))
	for i := range rows {
		out[i] = rows[i].shortURL()
	}
	return out, nil
}

// DeleteShortURL deletes the short URL id of the image user/image;
// ErrNotExist unless it exists and belongs to that image.
func (db *DB) DeleteShortURL(ctx context.Context, user, image, id string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := deleted(tx.NewDelete().Model((*shortURLRow)(nil)).
			Where("id = ? AND user_name = ? AND identifier = ?", id, user, image).Exec(ctx)); err != nil {
			return err
		}
		return db.audit(ctx, tx, auditEvent{"shorturl.delete", user + "/" + image, map[string]any{"id": id}})
	})
	if err != nil {
		return fmt.Errorf("storage: delete short URL %s of %s/%s: %w", id, user, image, err)
	}
	return nil
}

// DeleteShortURLs deletes every short URL of an image; none is not an error.
func (db *DB) DeleteShortURLs(ctx context.Context, user, image string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*shortURLRow)(nil)).
			Where("user_name = ? AND identifier = ?", user, image).Exec(ctx)
		if err != nil {
			return err
		}
		n, err := affected(res)
		if err != nil || n == 0 {
			return err
		}
		return db.audit(ctx, tx, auditEvent{"shorturl.delete", user + "/" + image, map[string]any{"deleted": n}})
	})
	if err != nil {
		return fmt.Errorf("storage: delete short URLs of %s/%s: %w", user, image, err)
	}
	return nil
}
