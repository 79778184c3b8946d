package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Admin UI sessions (the table is step 5). A session row holds the private
// key the user signed in with, sealed like api_keys' private keys, so the
// browser never holds it; the row is looked up by the SHA-256 of the session
// id, so a copy of the table gives no usable cookie.

// Session is a signed-in admin UI session.
type Session struct {
	// IDHash identifies the session: the hex SHA-256 of the id in the
	// browser's cookie.
	IDHash     string
	PublicKey  string
	PrivateKey string
	// CSRF is the token every form of the session carries.
	CSRF    string
	Created time.Time
	// Seen is the time of the session's last request.
	Seen time.Time
	// Addr and UserAgent are the client address and browser of the sign-in
	// (migration step 10).
	Addr, UserAgent string
}

type sessionRow struct {
	bun.BaseModel `bun:"table:admin_sessions"`

	IDHash     string `bun:"id_hash,pk"`
	PublicKey  string `bun:"public_key"`
	PrivateKey string `bun:"private_key"`
	CSRF       string `bun:"csrf"`
	Created    int64  `bun:"created"`
	Seen       int64  `bun:"seen"`
	Addr       string `bun:"addr"`
	UserAgent  string `bun:"user_agent"`
}

// CreateSession stores a new session; its private key is sealed with the
// database's secret.
func (db *DB) CreateSession(ctx context.Context, s Session) error {
	if len(s.IDHash) != 64 || s.PublicKey == "" || s.PrivateKey == "" || s.CSRF == "" {
		return fmt.Errorf("storage: create session: %w", ErrInvalid)
	}
	sealed, err := db.sealKey(s.PublicKey, s.PrivateKey)
	if err != nil {
		return fmt.Errorf("storage: create session: %w", err)
	}
	row := &sessionRow{IDHash: s.IDHash, PublicKey: s.PublicKey, PrivateKey: sealed, CSRF: s.CSRF,
		Created: s.Created.UnixMicro(), Seen: s.Seen.UnixMicro(), Addr: clip(s.Addr, 64), UserAgent: clip(s.UserAgent, 512)}
	if _, err := db.bun.NewInsert().Model(row).Exec(ctx); err != nil {
		return fmt.Errorf("storage: create session: %w", err)
	}
	return nil
}

// Session returns the session with the given id hash; ErrNotExist when
// there is none.
func (db *DB) Session(ctx context.Context, idHash string) (Session, error) {
	var row sessionRow
	err := db.bun.NewSelect().Model(&row).Where("id_hash = ?", idHash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("storage: session: %w", ErrNotExist)
	}
	if err != nil {
		return Session{}, fmt.Errorf("storage: session: %w", err)
	}
	priv, err := db.openKey(row.PublicKey, row.PrivateKey)
	if err != nil {
		return Session{}, fmt.Errorf("storage: session: %w", err)
	}
	return Session{IDHash: row.IDHash, PublicKey: row.PublicKey, PrivateKey: priv, CSRF: row.CSRF,
		Created: time.UnixMicro(row.Created).UTC(), Seen: time.UnixMicro(row.Seen).UTC(), Addr: row.Addr, UserAgent: row.UserAgent}, nil
}

// TouchSession records a request of the session at time at.
func (db *DB) TouchSession(ctx context.Context, idHash string, at time.Time) error {
	_, err := db.bun.NewUpdate().Model((*sessionRow)(nil)).Set("seen = ?", at.UnixMicro()).
		Where("id_hash = ?", idHash).Exec(ctx)
	if err != nil {
		return fmt.Errorf("storage: touch session: %w", err)
	}
	return nil
}

// DeleteSession removes a session; deleting a missing one is not an error.
func (db *DB) DeleteSession(ctx context.Context, idHash string) error {
	if _, err := db.bun.NewDelete().Model((*sessionRow)(nil)).Where("id_hash = ?", idHash).Exec(ctx); err != nil {
		return fmt.Errorf("storage: delete session: %w", err)
	}
	return nil
}

// DeleteSessionsBefore removes the sessions created before created or last
// seen before seen, the ones past their absolute or idle expiry.
func (db *DB) DeleteSessionsBefore(ctx context.Context, created, seen time.Time) error {
	_, err := db.bun.NewDelete().Model((*sessionRow)(nil)).
		Where("created < ? OR seen < ?", created.UnixMicro(), seen.UnixMicro()).Exec(ctx)
	if err != nil {
		return fmt.Errorf("storage: delete expired sessions: %w", err)
	}
	return nil
}

// SessionsOf calls each for every session of publicKey, most recently
// seen first, without reading the private keys. Why a callback of plain
// values: the admin UI finds this ability by type assertion on its own
// session store, which a method returning storage's types could not
// satisfy.
func (db *DB) SessionsOf(ctx context.Context, publicKey string, each func(idHash, addr, userAgent string, created, seen time.Time)) error {
	var rows []sessionRow
	err := db.bun.NewSelect().Model(&rows).Column("id_hash", "addr", "user_agent", "created", "seen").
		Where("public_key = ?", publicKey).Order("seen DESC", "id_hash").Scan(ctx)
	if err != nil {
		return fmt.Errorf("storage: sessions of %s: %w", publicKey, err)
	}
	for _, r := range rows {
		each(r.IDHash, r.Addr, r.UserAgent, time.UnixMicro(r.Created).UTC(), time.UnixMicro(r.Seen).UTC())
	}
	return nil
}

// DeleteSessionsOf ends every session of publicKey and returns how many
// there were.
func (db *DB) DeleteSessionsOf(ctx context.Context, publicKey string) (int64, error) {
	res, err := db.bun.NewDelete().Model((*sessionRow)(nil)).Where("public_key = ?", publicKey).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("storage: delete sessions of %s: %w", publicKey, err)
	}
	return affected(res)
}
