package storage

import (
	"context"
	"fmt"
	"time"
)

// A backup of a PostgreSQL or MySQL store (Backup) holds its rows as an
// SQLite database, the same file a backup of the embedded default holds:
// dumpSQLite writes it from one repeatable-read transaction, and LoadDump
// writes it into an empty database of any dialect at a restore. Sealed
// values (private keys, webhook secrets) stay sealed with the store's
// secret, as in a backup of SQLite.

// dumpSQLite writes db's rows at one moment into a new SQLite database at
// path. The moment is between taken and until.
func dumpSQLite(ctx context.Context, db *DB, path string) (taken, until time.Time, err error) {
	out, err := Open(ctx, "sqlite://"+path, Options{})
	if err != nil {
		return taken, until, err
	}
	defer out.Close()
	out.sealer = db.sealer
	if err := sameSchema(ctx, db, out); err != nil {
		return taken, until, err
	}
	taken = time.Now().UTC()
	conn, done, err := sourceSnapshot(ctx, db, "")
	until = time.Now().UTC()
	if err != nil {
		return taken, until, err
	}
	defer done()
	return taken, until, syncTables(unbounded(ctx), conn, db, out, &CopyPass{}, nil)
}

// sameSchema refuses a copy between databases at different schema
// versions.
func sameSchema(ctx context.Context, src, dst *DB) error {
	v, err := src.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	w, err := dst.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v != w {
		return fmt.Errorf("storage: the source's schema is version %d, the target's %d: run the same vitrine on both: %w", v, w, ErrInvalid)
	}
	return nil
}

// LoadDump writes the rows of the SQLite database at path (a restored
// snapshot, which it migrates to this version) into dst, which must hold none;
// values sealed in it are opened and sealed with dst's secret.
func LoadDump(ctx context.Context, path string, dst *DB) error {
	dump, err := Open(ctx, "sqlite://"+path, Options{})
	if err != nil {
		return fmt.Errorf("storage: load the snapshot: %w", err)
	}
	defer dump.Close()
	dump.sealer = dst.sealer
	if err := sameSchema(ctx, dump, dst); err != nil {
		return err
	}
	// The tables of what a user made (the others a migration may seed,
	// as filter_set's one row, or hold only what follows from these).
	for _, t := range []string{"images", "api_keys", "access_groups", "webhooks", "quotas", "upload_tokens", "filter_versions", "audit_log"} {
		n, err := dst.bun.NewSelect().Table(t).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("storage: restore: the target database's %s holds %d rows: restore into an empty database: %w", t, n, ErrInvalid)
		}
	}
	if err := syncTables(unbounded(ctx), dump.bun, dump, dst, &CopyPass{}, nil); err != nil {
		return fmt.Errorf("storage: restore: %w", err)
	}
	return nil
}
