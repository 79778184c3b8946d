package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// keyRow is the api_keys table.
type keyRow struct {
	bun.BaseModel `bun:"table:api_keys"`

	PublicKey  string `bun:"public_key,pk"`
	PrivateKey string `bun:"private_key"`
	Created    int64  `bun:"created"` // unix microseconds, 0 when unknown
}

// createdTime reads a stored creation time; 0 is unknown.
func createdTime(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// Key returns a key pair. With Options.Secret the private key is decrypted;
// ErrDecrypt when it was encrypted under another secret.
func (db *DB) Key(ctx context.Context, publicKey string) (Key, error) {
	var row keyRow
	err := db.bun.NewSelect().Model(&row).Where("public_key = ?", publicKey).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("storage: key %s: %w", publicKey, ErrNotExist)
	}
	if err != nil {
		return Key{}, fmt.Errorf("storage: key %s: %w", publicKey, err)
	}
	priv, err := db.openKey(row.PublicKey, row.PrivateKey)
	if err != nil {
		return Key{}, fmt.Errorf("storage: key %s: %w", publicKey, err)
	}
	return Key{PublicKey: row.PublicKey, PrivateKey: priv, Created: createdTime(row.Created)}, nil
}

// RawPrivateKey returns the private key exactly as stored (encrypted when
// the DB has a secret). It exists for tests and diagnostics.
func (db *DB) RawPrivateKey(ctx context.Context, publicKey string) (string, error) {
	var raw string
	err := db.bun.NewSelect().Model((*keyRow)(nil)).Column("private_key").
		Where("public_key = ?", publicKey).Scan(ctx, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("storage: key %s: %w", publicKey, ErrNotExist)
	}
	if err != nil {
		return "", fmt.Errorf("storage: key %s: %w", publicKey, err)
	}
	return raw, nil
}

// PutKey creates a key pair, or changes the private key of an existing one;
// created tells which.
func (db *DB) PutKey(ctx context.Context, k Key) (created bool, err error) {
	row, err := db.keyRow(k)
	if err != nil {
		return false, err
	}
	created, err = db.upsert(ctx, row, "public_key", "private_key", auditEvent{action: "key", target: k.PublicKey})
	if err != nil {
		return false, fmt.Errorf("storage: put key %s: %w", k.PublicKey, err)
	}
	return created, nil
}

// CreateKey stores a new key pair together with its first rules, in one
// transaction: either the key and every rule are stored, or nothing is.
// ErrExist when the public key is taken (its private key is left alone);
// the rules are checked as AddRules checks them.
func (db *DB) CreateKey(ctx context.Context, k Key, rules []Rule) ([]Rule, error) {
	row, err := db.keyRow(k)
	if err != nil {
		return nil, err
	}
	rows, err := ruleRows(k.PublicKey, rules)
	if err != nil {
		return nil, err
	}
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := db.insertIgnore(tx.NewInsert().Model(row), "public_key").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := affected(res); err != nil {
			return err
		} else if n == 0 {
			return ErrExist
		}
		if err := db.audit(ctx, tx, auditEvent{action: "key.create", target: k.PublicKey}); err != nil {
			return err
		}
		return db.insertRules(ctx, tx, k.PublicKey, rows, rules)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: create key %s: %w", k.PublicKey, err)
	}
	out := make([]Rule, len(rows))
	for i := range rows {
		if out[i], err = rows[i].rule(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// keyRow checks k and returns its row, the private key sealed.
func (db *DB) keyRow(k Key) (*keyRow, error) {
	if err := checkLen("public key", k.PublicKey, maxName, true); err != nil {
		return nil, err
	}
	if k.PrivateKey == "" {
		return nil, fmt.Errorf("storage: key %s: empty private key: %w", k.PublicKey, ErrInvalid)
	}
	stored, err := db.sealKey(k.PublicKey, k.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("storage: key %s: %w", k.PublicKey, err)
	}
	return &keyRow{PublicKey: k.PublicKey, PrivateKey: stored, Created: time.Now().UnixMicro()}, nil
}

// DeleteKey deletes a key pair and its rules.
func (db *DB) DeleteKey(ctx context.Context, publicKey string) error {
	err := db.deleteWithRules(ctx, (*keyRow)(nil), "public_key", "public_key", publicKey,
		auditEvent{action: "key.delete", target: publicKey})
	if err != nil {
		return fmt.Errorf("storage: delete key %s: %w", publicKey, err)
	}
	return nil
}

// Keys returns every key pair sorted by public key.
func (db *DB) Keys(ctx context.Context) ([]Key, error) {
	var rows []keyRow
	if err := db.bun.NewSelect().Model(&rows).Order("public_key").Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: keys: %w", err)
	}
	keys := make([]Key, len(rows))
	for i, r := range rows {
		priv, err := db.openKey(r.PublicKey, r.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("storage: key %s: %w", r.PublicKey, err)
		}
		keys[i] = Key{PublicKey: r.PublicKey, PrivateKey: priv, Created: createdTime(r.Created)}
	}
	return keys, nil
}

// KeyNames returns every stored public key, sorted, without reading the
// private keys (so it works whatever the secret).
func (db *DB) KeyNames(ctx context.Context) ([]string, error) {
	var names []string
	if err := db.bun.NewSelect().Model((*keyRow)(nil)).Column("public_key").Order("public_key").Scan(ctx, &names); err != nil {
		return nil, fmt.Errorf("storage: key names: %w", err)
	}
	return names, nil
}

// KeysCreated returns the creation time of every stored key made since
// migration step 10, by public key.
func (db *DB) KeysCreated(ctx context.Context) (map[string]time.Time, error) {
	var rows []keyRow
	if err := db.bun.NewSelect().Model(&rows).Column("public_key", "created").Where("created > 0").Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: key creation times: %w", err)
	}
	out := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		out[r.PublicKey] = createdTime(r.Created)
	}
	return out, nil
}
