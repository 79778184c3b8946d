package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// stores are the opened persistence components.
type stores struct {
	cfg   *fileConfig
	db    *storage.DB
	blobs *storage.Blobs
	// parts keeps the parts of resumable uploads: the staging folder
	// (uploads.stagingDir) or, unset, blobs.
	parts *storage.Blobs
}

func (s *stores) Close() {
	if s.parts != nil && s.parts != s.blobs {
		s.parts.Close()
	}
	if s.blobs != nil {
		s.blobs.Close()
	}
	if s.db != nil {
		s.db.Close()
	}
}

// open loads the configuration and opens the database and blob store.
func open(ctx context.Context, f commonFlags) (*stores, error) {
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return nil, err
	}
	return openStores(ctx, cfg, f.data)
}

// openStores opens (and migrates) the database and opens the blob store
// of cfg. On an error it closes what it opened.
func openStores(ctx context.Context, cfg *fileConfig, dataDir string) (*stores, error) {
	st, err := openDBConfig(ctx, cfg, dataDir)
	if err != nil {
		return nil, err
	}
	if st.blobs, err = storage.OpenBlobs(ctx, st.cfg.Storage); err != nil {
		st.db.Close()
		return nil, fmt.Errorf("storage: %w", err)
	}
	st.blobs.SetTimeout(st.cfg.StorageTimeout)
	st.parts = st.blobs
	if dir := st.cfg.Uploads.API.StagingDir; dir != "" {
		if st.parts, err = storage.OpenBlobs(ctx, "file://"+filepath.ToSlash(dir)); err != nil {
			st.Close()
			return nil, fmt.Errorf("uploads.stagingDir: %w", err)
		}
	}
	return st, nil
}

// openDB opens only the database: key management needs no blob store.
func openDB(ctx context.Context, f commonFlags) (*stores, error) {
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return nil, err
	}
	return openDBConfig(ctx, cfg, f.data)
}

// openDBConfig opens (and migrates) the database of cfg.
func openDBConfig(ctx context.Context, cfg *fileConfig, dataDir string) (*stores, error) {
	secret, err := loadSecret(cfg, dataDir)
	if err != nil {
		return nil, err
	}
	st := &stores{cfg: cfg}
	if st.db, err = storage.Open(ctx, cfg.Database, storage.Options{Secret: secret, MaxOpenConns: cfg.DatabaseMaxConns,
		QueryTimeout: cfg.DatabaseTimeout, ReservationLease: cfg.BlobQueue.ReservationLease}); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	st.db.SetEvents(outbox.Wanted(cfg.Events, cfg.Webhooks, len(cfg.CDN.Purgers)))
	st.db.SetQuotas(cfg.Quotas)
	return st, nil
}

// loadSecret returns the configured secret, or the one kept in
// <data>/secret, creating it on first use.
func loadSecret(cfg *fileConfig, dataDir string) ([]byte, error) {
	if cfg.Secret != "" {
		return []byte(cfg.Secret), nil
	}
	path := filepath.Join(dataDir, "secret")
	if b, err := os.ReadFile(path); err == nil {
		return []byte(strings.TrimSpace(string(b))), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	s := randomHex(32)
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write secret: %w", err)
	}
	return []byte(s), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// webSessions keeps the admin UI's sessions in the database, so every
// instance shares them.
type webSessions struct{ *storage.DB }

func (s webSessions) CreateSession(ctx context.Context, x web.Session) error {
	return s.DB.CreateSession(ctx, storage.Session(x))
}

func (s webSessions) Session(ctx context.Context, idHash string) (web.Session, error) {
	x, err := s.DB.Session(ctx, idHash)
	if errors.Is(err, storage.ErrNotExist) {
		return web.Session{}, web.ErrNoSession
	}
	return web.Session(x), err
}

// createKey stores a key pair with its rule (when given) in one
// transaction, so no key is left without the access it was created for.
func createKey(ctx context.Context, st *stores, k storage.Key, rule *storage.Rule) error {
	var rules []storage.Rule
	if rule != nil {
		rules = append(rules, *rule)
	}
	_, err := st.db.CreateKey(ctx, k, rules)
	return err
}
