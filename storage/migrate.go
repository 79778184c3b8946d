package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// Migration is one numbered step of the schema, with its statements for
// each dialect. Steps run in Version order, each exactly once per database;
// the versions of all registered steps are 1..N without gaps. A step's
// statements run in one transaction where the dialect has transactional DDL
// (SQLite, PostgreSQL); MySQL commits each DDL statement on its own, so a
// MySQL step that fails half-way must be repaired by hand before a retry:
// keep MySQL steps to one statement where possible.
type Migration struct {
	// Version is the step's number, from 1.
	Version int
	// Name says what the step does, for logs and `vitrine migrate`.
	Name string
	// SQLite, Postgres and MySQL are the step's statements per dialect.
	SQLite, Postgres, MySQL []string
}

// Statements returns the step's statements for dialect ("sqlite",
// "postgres" or "mysql").
func (m Migration) Statements(dialect string) []string {
	switch dialect {
	case "postgres":
		return m.Postgres
	case "mysql":
		return m.MySQL
	}
	return m.SQLite
}

// ErrSchemaTooNew: the database was migrated by a newer vitrine than this
// one; this binary refuses to use it rather than misread it.
var ErrSchemaTooNew = errors.New("storage: database schema is newer than this vitrine")

// registry holds every step, filled by init functions only.
var registry []Migration

// register adds a step at init time; it panics on a duplicate version, so
// two steps numbered alike fail every test at once.
func register(m Migration) {
	if m.Version < 1 || m.Name == "" {
		panic(fmt.Sprintf("storage: migration %d %q: version must be positive and name set", m.Version, m.Name))
	}
	for _, r := range registry {
		if r.Version == m.Version {
			panic(fmt.Sprintf("storage: migration %d registered twice (%q and %q)", m.Version, r.Name, m.Name))
		}
	}
	registry = append(registry, m)
	slices.SortFunc(registry, func(a, b Migration) int { return a.Version - b.Version })
}

// Migrations returns every registered step in order.
func Migrations() []Migration {
	return slices.Clone(registry)
}

// checkRegistry reports a gap in the step numbers.
func checkRegistry() error {
	for i, m := range registry {
		if m.Version != i+1 {
			return fmt.Errorf("storage: migration steps are not numbered 1..%d: step %d is missing", len(registry), i+1)
		}
	}
	return nil
}

// migrationRow is the schema_migrations table: one row per applied step.
type migrationRow struct {
	bun.BaseModel `bun:"table:schema_migrations"`

	Version int64  `bun:"version,pk"`
	Name    string `bun:"name"`
	Applied int64  `bun:"applied"` // unix microseconds
}

// createMigrationsTable is the DDL of schema_migrations, the same on every
// dialect (VARCHAR for MySQL's sake).
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version BIGINT NOT NULL PRIMARY KEY,
		name VARCHAR(255) NOT NULL,
		applied BIGINT NOT NULL)`

// SchemaVersion returns the number of the last step applied to the
// database, 0 for an empty database, and 1 for a database that the
// create-if-missing code before versioned migrations made.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	v, _, err := db.schemaVersion(ctx, db.bun)
	return v, err
}

// schemaVersion reads the current version through conn; adopted is true
// when the database predates schema_migrations but holds step 1's tables.
func (db *DB) schemaVersion(ctx context.Context, conn bun.IDB) (version int, adopted bool, err error) {
	has, err := db.hasTable(ctx, conn, "schema_migrations")
	if err != nil {
		return 0, false, err
	}
	if !has {
		images, err := db.hasTable(ctx, conn, "images")
		if err != nil || !images {
			return 0, false, err
		}
		return 1, true, nil
	}
	var max sql.NullInt64
	if err := conn.NewSelect().Model((*migrationRow)(nil)).ColumnExpr("MAX(version)").Scan(ctx, &max); err != nil {
		return 0, false, fmt.Errorf("storage: read schema version: %w", err)
	}
	return int(max.Int64), false, nil
}

// hasTable reports whether the current database (schema, for PostgreSQL)
// has the named table.
func (db *DB) hasTable(ctx context.Context, conn bun.IDB, name string) (bool, error) {
	q := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	switch db.kind {
	case postgresKind:
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
	case mysqlKind:
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
	}
	var n int
	if err := conn.QueryRowContext(ctx, q, name).Scan(&n); err != nil {
		return false, fmt.Errorf("storage: look for table %s: %w", name, err)
	}
	return n > 0, nil
}

// PendingMigrations returns the steps that Migrate would apply, without
// applying or locking anything; ErrSchemaTooNew when the database is newer
// than this binary.
func (db *DB) PendingMigrations(ctx context.Context) ([]Migration, error) {
	if err := checkRegistry(); err != nil {
		return nil, err
	}
	v, _, err := db.schemaVersion(ctx, db.bun)
	if err != nil {
		return nil, err
	}
	return pendingAfter(v)
}

// pendingAfter returns the steps after version v.
func pendingAfter(v int) ([]Migration, error) {
	if v > len(registry) {
		return nil, fmt.Errorf("%w: the database is at step %d, this binary knows steps up to %d; upgrade vitrine or point it at another database", ErrSchemaTooNew, v, len(registry))
	}
	return slices.Clone(registry[v:]), nil
}

// Migrate brings the schema up to the newest step this binary knows and
// returns the steps it applied. Several processes may call it on one
// database at the same moment: they take a lock (PostgreSQL advisory lock,
// MySQL GET_LOCK, SQLite's write lock) and each step is applied once. A
// database that predates schema_migrations is recorded as being at step 1.
// ErrSchemaTooNew when the database is newer than this binary.
func (db *DB) Migrate(ctx context.Context) ([]Migration, error) {
	if err := checkRegistry(); err != nil {
		return nil, err
	}
	ctx = unbounded(ctx) // a step may rewrite a large table
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: migrate: %w", err)
	}
	defer conn.Close()
	if db.kind == sqliteKind {
		// Why one transaction: the DSN's _txlock=immediate makes BEGIN take
		// SQLite's write lock, which is the migration lock; SQLite's DDL is
		// transactional, so all steps commit together or not at all.
		var applied []Migration
		err := conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			applied, err = db.migrateLocked(ctx, tx, func(_ context.Context, f func(bun.IDB) error) error { return f(tx) })
			return err
		})
		return applied, err
	}
	unlock, err := db.lockMigrations(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer unlock()
	step := func(ctx context.Context, f func(bun.IDB) error) error {
		if db.kind == mysqlKind {
			return f(conn) // DDL commits implicitly; a transaction gains nothing
		}
		return conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return f(tx) })
	}
	return db.migrateLocked(ctx, conn, step)
}

// lockMigrations takes the cross-process migration lock on conn and
// returns its release. The lock is named after the database (schema, for
// PostgreSQL), so migrations of unrelated databases on one server do not
// wait for each other.
func (db *DB) lockMigrations(ctx context.Context, conn bun.Conn) (unlock func(), err error) {
	release := context.WithoutCancel(ctx)
	switch db.kind {
	case postgresKind:
		const key = "hashtext('vitrine.migrate.' || current_schema())"
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock("+key+")"); err != nil {
			return nil, fmt.Errorf("storage: migrate: lock: %w", err)
		}
		return func() { _, _ = conn.ExecContext(release, "SELECT pg_advisory_unlock("+key+")") }, nil
	case mysqlKind:
		const name = "CONCAT('vitrine.migrate.', DATABASE())"
		// GET_LOCK waits at most its timeout (seconds) and answers 1 when it
		// got the lock; ctx still bounds the wait.
		timeout := 600
		if d, ok := ctx.Deadline(); ok {
			timeout = max(1, int(time.Until(d).Seconds()))
		}
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT GET_LOCK(%s, %d)", name, timeout)).Scan(&got); err != nil {
			return nil, fmt.Errorf("storage: migrate: lock: %w", err)
		}
		if got.Int64 != 1 {
			return nil, fmt.Errorf("storage: migrate: lock: another instance held the migration lock for %d s", timeout)
		}
		return func() { _, _ = conn.ExecContext(release, "SELECT RELEASE_LOCK("+name+")") }, nil
	}
	return func() {}, nil
}

// migrateLocked applies the pending steps; the caller holds the lock. conn
// reads and creates schema_migrations; step runs one step's work, in a
// transaction where the dialect allows.
func (db *DB) migrateLocked(ctx context.Context, conn bun.IDB, step func(context.Context, func(bun.IDB) error) error) ([]Migration, error) {
	v, adopted, err := db.schemaVersion(ctx, conn)
	if err != nil {
		return nil, err
	}
	pending, err := pendingAfter(v)
	if err != nil {
		return nil, err
	}
	if len(pending) == 0 && !adopted {
		return nil, nil
	}
	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("storage: migrate: create schema_migrations: %w", err)
	}
	if adopted {
		if err := record(ctx, conn, registry[0], "(adopted: created before versioned migrations)"); err != nil {
			return nil, err
		}
	}
	dialect := db.Dialect()
	for _, m := range pending {
		err := step(ctx, func(tx bun.IDB) error {
			for _, s := range m.Statements(dialect) {
				if _, err := tx.ExecContext(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", firstLine(s), err)
				}
			}
			return record(ctx, tx, m, "")
		})
		if err != nil {
			return nil, fmt.Errorf("storage: migrate: step %d (%s): %w", m.Version, m.Name, err)
		}
	}
	return pending, nil
}

// record notes that step m is applied.
func record(ctx context.Context, conn bun.IDB, m Migration, note string) error {
	name := m.Name
	if note != "" {
		name += " " + note
	}
	row := &migrationRow{Version: int64(m.Version), Name: name, Applied: time.Now().UnixMicro()}
	if _, err := conn.NewInsert().Model(row).Exec(ctx); err != nil {
		return fmt.Errorf("storage: migrate: record step %d: %w", m.Version, err)
	}
	return nil
}
