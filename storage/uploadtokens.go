package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Upload tokens (migration step 19) let whoever holds one upload images
// for one user, within a policy, without a private key. The token itself
// is never stored: a row is found by the SHA-256 of the token (Hash), so a
// copy of the table gives no usable token. Each upload made with a token
// spends one of its uses in the image's own transaction (CommitImage, given
// the token's id in Image.UploadToken), so that two uploads racing for the
// last use on any number of instances commit one image between them.

// UploadToken is an upload token's record: whom it uploads for, its policy
// and what is left of it.
type UploadToken struct {
	// ID names the token in the audit log and in revocation; it is not
	// secret.
	ID string
	// Hash is the hex SHA-256 of the token.
	Hash string
	// User is the user the token uploads for.
	User string
	// PublicKey is the key that issued the token; its uploads are recorded
	// as that key's.
	PublicKey string
	// Uses is how many uploads the token allows, UsesLeft how many it has
	// left.
	Uses, UsesLeft int
	// MaxBytes and MaxPixels cap each upload.
	MaxBytes, MaxPixels int64
	// Formats lists the image types (by extension) the token accepts.
	Formats []string
	// Metadata is given to each image uploaded with the token; its numbers
	// read back as json.Number, as metadata's do.
	Metadata map[string]any
	// Origin, when set, is the one browser origin the token may be used
	// from.
	Origin string
	// Created and Expires bound the token's life.
	Created, Expires time.Time
	// Revoked is when the token was revoked; zero while it was not.
	Revoked time.Time
}

// maxTokenID is the longest token id the table holds (MySQL's VARCHAR(32)).
const maxTokenID = 32

type uploadTokenRow struct {
	bun.BaseModel `bun:"table:upload_tokens"`

	ID        string `bun:"id,pk"`
	Hash      string `bun:"hash"`
	User      string `bun:"user_name"`
	PublicKey string `bun:"public_key"`
	Uses      int    `bun:"uses"`
	UsesLeft  int    `bun:"uses_left"`
	MaxBytes  int64  `bun:"max_bytes"`
	MaxPixels int64  `bun:"max_pixels"`
	Formats   string `bun:"formats"`
	Metadata  string `bun:"metadata"`
	Origin    string `bun:"origin"`
	Created   int64  `bun:"created"`
	Expires   int64  `bun:"expires"`
	Revoked   int64  `bun:"revoked"`
}

func (r *uploadTokenRow) token() (UploadToken, error) {
	t := UploadToken{ID: r.ID, Hash: r.Hash, User: r.User, PublicKey: r.PublicKey, Uses: r.Uses,
		UsesLeft: r.UsesLeft, MaxBytes: r.MaxBytes, MaxPixels: r.MaxPixels, Origin: r.Origin,
		Created: time.UnixMicro(r.Created).UTC(), Expires: time.UnixMicro(r.Expires).UTC()}
	if r.Formats != "" {
		t.Formats = strings.Split(r.Formats, ",")
	}
	if r.Revoked != 0 {
		t.Revoked = time.UnixMicro(r.Revoked).UTC()
	}
	md, err := decodeDocument(r.Metadata)
	if err != nil {
		return UploadToken{}, fmt.Errorf("upload token %s: %w", r.ID, err)
	}
	if len(md) > 0 {
		t.Metadata = md
	}
	return t, nil
}

// CreateUploadToken stores a new token with all its uses left, and records
// it in the audit log as made by ctx's actor. ErrExist when its id or hash
// is taken; ErrInvalid for a record the table cannot hold.
func (db *DB) CreateUploadToken(ctx context.Context, t UploadToken) error {
	if err := validateUploadToken(t); err != nil {
		return fmt.Errorf("storage: create upload token: %w", err)
	}
	md := "{}"
	if len(t.Metadata) > 0 {
		b, err := json.Marshal(t.Metadata)
		if err != nil {
			return fmt.Errorf("storage: create upload token: metadata: %w", err)
		}
		md = string(b)
	}
	row := &uploadTokenRow{ID: t.ID, Hash: t.Hash, User: t.User, PublicKey: t.PublicKey, Uses: t.Uses,
		UsesLeft: t.Uses, MaxBytes: t.MaxBytes, MaxPixels: t.MaxPixels, Formats: strings.Join(t.Formats, ","),
		Metadata: md, Origin: t.Origin, Created: t.Created.UnixMicro(), Expires: t.Expires.UnixMicro()}
	detail := map[string]any{"uploads": t.Uses, "expires": t.Expires.UTC().Format(time.RFC3339),
		"maxBytes": t.MaxBytes, "maxPixels": t.MaxPixels, "formats": t.Formats}
	if t.Origin != "" {
		detail["origin"] = t.Origin
	}
	if len(t.Metadata) > 0 {
		detail["metadataKeys"] = metadataDetail(t.Metadata)["keys"]
	}
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := db.insertIgnore(tx.NewInsert().Model(row), "id").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := affected(res); err != nil {
			return err
		} else if n == 0 {
			return ErrExist
		}
		return db.audit(ctx, tx, auditEvent{"uploadtoken.create", tokenTarget(t.User, t.ID), detail})
	})
	if err != nil {
		return fmt.Errorf("storage: create upload token %s: %w", t.ID, err)
	}
	return nil
}

// validateUploadToken rejects what the table cannot hold the same way on
// every dialect.
func validateUploadToken(t UploadToken) error {
	for _, c := range []struct {
		what, v string
		max     int
	}{
		{"token id", t.ID, maxTokenID}, {"user", t.User, maxName}, {"public key", t.PublicKey, maxName},
		{"formats", strings.Join(t.Formats, ","), maxName}, {"origin", t.Origin, maxName},
	} {
		if err := checkLen(c.what, c.v, c.max, c.what != "origin"); err != nil {
			return err
		}
	}
	if len(t.Hash) != 64 || t.Uses < 1 || t.MaxBytes < 1 || t.MaxPixels < 1 || !t.Expires.After(t.Created) {
		return fmt.Errorf("hash, uses, limits or expiry out of range: %w", ErrInvalid)
	}
	return nil
}

// tokenTarget is the audit target of a token: <user>/uploadtokens/<id>.
func tokenTarget(user, id string) string { return user + "/uploadtokens/" + id }

// UploadToken returns the token whose hash is hash; ErrNotExist when there
// is none.
func (db *DB) UploadToken(ctx context.Context, hash string) (UploadToken, error) {
	return db.uploadToken(ctx, db.bun, "hash", hash)
}

// uploadToken reads the token whose column equals value through conn.
func (db *DB) uploadToken(ctx context.Context, conn bun.IDB, column, value string) (UploadToken, error) {
	var row uploadTokenRow
	err := conn.NewSelect().Model(&row).Where("? = ?", bun.Ident(column), value).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return UploadToken{}, fmt.Errorf("storage: upload token: %w", ErrNotExist)
	}
	if err != nil {
		return UploadToken{}, fmt.Errorf("storage: upload token: %w", err)
	}
	t, err := row.token()
	if err != nil {
		return UploadToken{}, fmt.Errorf("storage: %w", err)
	}
	return t, nil
}

// RevokeUploadToken revokes user's token id at time at, records that in
// the audit log, and returns the token. Revoking a revoked token changes
// nothing and returns it as it is; ErrNotExist when user has no token id.
func (db *DB) RevokeUploadToken(ctx context.Context, user, id string, at time.Time) (UploadToken, error) {
	var t UploadToken
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*uploadTokenRow)(nil)).Set("revoked = ?", at.UnixMicro()).
			Where("id = ? AND user_name = ? AND revoked = 0", id, user).Exec(ctx)
		if err != nil {
			return err
		}
		n, err := affected(res)
		if err != nil {
			return err
		}
		if t, err = db.uploadToken(ctx, tx, "id", id); err != nil {
			return err
		}
		if t.User != user {
			return fmt.Errorf("upload token %s of %s: %w", id, user, ErrNotExist)
		}
		if n == 0 {
			return nil
		}
		return db.audit(ctx, tx, auditEvent{"uploadtoken.revoke", tokenTarget(user, id), nil})
	})
	if err != nil {
		return UploadToken{}, fmt.Errorf("storage: revoke upload token %s: %w", id, err)
	}
	return t, nil
}

// SpendUploadToken spends one use of token id now: for an upload made with
// it that stores nothing (the user already had the image), since
// CommitImage spends the use of an upload that stores its image.
// ErrUploadTokenSpent when the token has none left.
func (db *DB) SpendUploadToken(ctx context.Context, id string) error {
	if err := db.spendUploadToken(ctx, db.bun, id); err != nil {
		return fmt.Errorf("storage: spend upload token %s: %w", id, err)
	}
	return nil
}

// spendUploadToken takes one use of token id through conn, in one
// statement whose condition every dialect re-checks once it holds the
// row: of two transactions racing for the last use, the second finds none
// (ErrUploadTokenSpent).
func (db *DB) spendUploadToken(ctx context.Context, conn bun.IDB, id string) error {
	res, err := conn.NewUpdate().Model((*uploadTokenRow)(nil)).Set("uses_left = uses_left - 1").
		Where("id = ? AND uses_left > 0 AND revoked = 0 AND expires > ?", id, time.Now().UnixMicro()).Exec(ctx)
	if err != nil {
		return err
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return ErrUploadTokenSpent
	}
	return nil
}

// PurgeUploadTokens deletes the tokens that expired before before and
// returns how many went.
func (db *DB) PurgeUploadTokens(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.bun.NewDelete().Model((*uploadTokenRow)(nil)).Where("expires < ?", before.UnixMicro()).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("storage: purge upload tokens: %w", err)
	}
	return affected(res)
}
