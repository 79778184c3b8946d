package storage

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "github.com/mattn/go-sqlite3"    // registers the "sqlite3" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

// Options tunes a DB. The zero value is valid.
type Options struct {
	// Secret, when non-empty, encrypts private keys at rest with AES-256-GCM
	// under a key derived from it with HKDF-SHA256. Without a secret, private
	// keys are stored as given. A database written with a secret must be
	// opened with the same secret to read its keys (ErrDecrypt otherwise).
	Secret []byte
	// SkipMigrate opens the database without applying pending schema
	// steps (for `vitrine migrate --dry-run`). Everything but
	// SchemaVersion, PendingMigrations and Migrate may then fail.
	SkipMigrate bool
	// QueryTimeout bounds every statement (DefaultQueryTimeout when 0), so
	// that a database that stalls fails the request instead of holding it.
	// Schema migrations are not bounded.
	QueryTimeout time.Duration
	// ReservationLease is how long a reserved blob key is kept from the
	// collector (DefaultReservationLease when 0; see Reserve).
	ReservationLease time.Duration
	// MaxOpenConns caps the connections to a PostgreSQL or MySQL server (0:
	// no cap). As many are kept open when idle (16 without a cap), so that a
	// busy instance does not reconnect for every query. Size it so that
	// instances x MaxOpenConns stays under the server's connection limit.
	MaxOpenConns int
}

// DefaultQueryTimeout bounds each statement unless Options.QueryTimeout
// says otherwise.
const DefaultQueryTimeout = 5 * time.Second

// kind is the SQL dialect behind a DB.
type kind int

const (
	sqliteKind kind = iota
	postgresKind
	mysqlKind
)

// DB stores image records, metadata, short URLs, keys, groups and rules in
// SQLite, PostgreSQL or MySQL/MariaDB. It is safe for concurrent use.
//
// Times are stored as UTC unix microseconds in BIGINT columns, the same on
// every dialect; Added and Updated are truncated to whole seconds on write
// because HTTP dates (Last-Modified) have second resolution.
type DB struct {
	bun    *bun.DB
	kind   kind
	file   string  // the SQLite database's file; "" for another or in memory
	sealer *sealer // nil when private keys are stored as given
	lease  time.Duration
	// inserted is the last images.inserted value this DB wrote
	// (insertedNow).
	inserted atomic.Int64
	// events turns on the writing of event rows (SetEvents).
	events atomic.Bool
	// written signals EventsWritten.
	written chan struct{}
	// quotas are the default quotas (SetQuotas); nil is unlimited.
	quotas atomic.Pointer[Quotas]
	// txRetries counts the transactions run again (runTx).
	txRetries atomic.Int64
}

// Open connects to the database named by dsn and applies any pending schema
// steps (Migrate) unless opts.SkipMigrate. Accepted forms:
//
//	sqlite:///abs/path/vitrine.db   (parent directories are created)
//	sqlite://relative/path.db
//	sqlite::memory:                  (a private in-memory database)
//	postgres://user@host:5432/db?sslmode=disable   (also postgresql://)
//	mysql://user:pass@host:3306/db
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	db := &DB{lease: opts.ReservationLease, written: make(chan struct{}, 1)}
	if db.lease <= 0 {
		db.lease = DefaultReservationLease
	}
	if len(opts.Secret) > 0 {
		s, err := newSealer(opts.Secret)
		if err != nil {
			return nil, fmt.Errorf("storage: open: %w", err)
		}
		db.sealer = s
	}
	var (
		sqldb *sql.DB
		err   error
	)
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		db.kind = sqliteKind
		db.file, _ = SQLiteFile(dsn)
		sqldb, err = openSQLite(strings.TrimPrefix(dsn, "sqlite:"))
		if err == nil {
			db.bun = bun.NewDB(sqldb, sqlitedialect.New())
		}
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db.kind = postgresKind
		sqldb, err = sql.Open("pgx", dsn)
		if err == nil {
			db.bun = bun.NewDB(sqldb, pgdialect.New())
		}
	case strings.HasPrefix(dsn, "mysql://"):
		db.kind = mysqlKind
		var src string
		src, err = mysqlDSN(dsn)
		if err == nil {
			sqldb, err = sql.Open("mysql", src)
		}
		if err == nil {
			db.bun = bun.NewDB(sqldb, mysqldialect.New())
		}
	default:
		return nil, fmt.Errorf("storage: open: unsupported database URL scheme in %q: %w", RedactURL(dsn), ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", RedactURL(dsn), err)
	}
	if db.kind != sqliteKind {
		idle := opts.MaxOpenConns
		if idle <= 0 {
			idle = 16
		}
		sqldb.SetMaxOpenConns(max(opts.MaxOpenConns, 0))
		sqldb.SetMaxIdleConns(idle)
	}
	timeout := opts.QueryTimeout
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	db.bun = db.bun.WithQueryHook(timeoutHook(timeout)).WithQueryHook(traceHook{dbSystem(db.kind)})
	if err := db.Ping(ctx); err != nil {
		_ = sqldb.Close()
		return nil, err
	}
	if !opts.SkipMigrate {
		if _, err := db.Migrate(ctx); err != nil {
			_ = sqldb.Close()
			return nil, err
		}
	}
	return db, nil
}

// sqliteFilePath is the file a sqlite: DSN's path part names: sqlite:///abs
// and sqlite://rel name /abs and rel.
func sqliteFilePath(path string) string {
	if strings.HasPrefix(path, "//") {
		return path[2:]
	}
	return path
}

// SQLiteFile returns the database file of a sqlite: DSN; false for another
// database or an in-memory one.
func SQLiteFile(dsn string) (string, bool) {
	rest, ok := strings.CutPrefix(dsn, "sqlite:")
	path, _, _ := strings.Cut(rest, "?")
	if !ok || path == ":memory:" || path == "//:memory:" {
		return "", false
	}
	path = sqliteFilePath(path)
	return path, path != ""
}

// openSQLite opens the SQLite database at rest, the part of the DSN after
// "sqlite:".
func openSQLite(rest string) (*sql.DB, error) {
	path, query, _ := strings.Cut(rest, "?")
	params := url.Values{}
	// Why: database/sql runs statements on many connections. With WAL,
	// readers never block the writer; _txlock=immediate takes the write lock
	// at BEGIN, so a transaction never fails half-way when upgrading a read
	// lock, and busy_timeout makes concurrent writers queue instead of
	// failing with SQLITE_BUSY.
	params.Set("_busy_timeout", "10000")
	params.Set("_foreign_keys", "1")
	params.Set("_txlock", "immediate")
	memory := path == ":memory:" || path == "//:memory:"
	if memory {
		path = ":memory:"
	} else {
		path = sqliteFilePath(path)
		if path == "" {
			return nil, fmt.Errorf("empty SQLite path: %w", ErrInvalid)
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("create database directory: %w", err)
			}
		}
		params.Set("_journal_mode", "WAL")
		params.Set("_synchronous", "NORMAL")
	}
	extra, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("SQLite parameters: %w", err)
	}
	for k, v := range extra {
		params[k] = v
	}
	sqldb, err := sql.Open("sqlite3", "file:"+path+"?"+params.Encode())
	if err != nil {
		return nil, err
	}
	if memory {
		// Each connection to ":memory:" is its own database: keep exactly one.
		sqldb.SetMaxOpenConns(1)
		sqldb.SetMaxIdleConns(1)
		sqldb.SetConnMaxLifetime(0)
		sqldb.SetConnMaxIdleTime(0)
	} else {
		// database/sql keeps 2 idle connections by default: under
		// concurrent requests the others would be closed after each query
		// and opened again (the PRAGMAs above) by the next.
		sqldb.SetMaxIdleConns(16)
	}
	return sqldb, nil
}

// mysqlDSN turns mysql://user:pass@host:port/db?k=v into the
// go-sql-driver/mysql form, with parseTime=true.
func mysqlDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parse MySQL URL: %w", err)
	}
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = u.Hostname() + ":3306"
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	cfg.ParseTime = true
	src := cfg.FormatDSN()
	if u.RawQuery != "" {
		sep := "?"
		if strings.Contains(src, "?") {
			sep = "&"
		}
		src += sep + u.RawQuery
	}
	if _, err := mysql.ParseDSN(src); err != nil {
		return "", fmt.Errorf("MySQL parameters: %w", err)
	}
	return src, nil
}

// Close closes the database.
func (db *DB) Close() error {
	if err := db.bun.Close(); err != nil {
		return fmt.Errorf("storage: close database: %w", err)
	}
	return nil
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.bun.PingContext(ctx); err != nil {
		return fmt.Errorf("storage: ping database: %w", err)
	}
	return nil
}

// Dialect names the SQL dialect: "sqlite", "postgres" or "mysql".
func (db *DB) Dialect() string {
	switch db.kind {
	case postgresKind:
		return "postgres"
	case mysqlKind:
		return "mysql"
	}
	return "sqlite"
}

// insertIgnore makes q skip a row whose primary or unique key is taken, so
// that RowsAffected is 0 for it. Why not INSERT IGNORE on MySQL: it also
// turns data errors (truncation) into warnings.
func (db *DB) insertIgnore(q *bun.InsertQuery, col string) *bun.InsertQuery {
	if db.kind == mysqlKind {
		return q.On("DUPLICATE KEY UPDATE " + col + " = " + col)
	}
	return q.On("CONFLICT DO NOTHING")
}

// upsert inserts row (a model with a primary key), or updates column of
// the existing row; created tells which. ev is recorded in the audit log
// with ".create" or ".update" appended to its action.
func (db *DB) upsert(ctx context.Context, row any, keyCol, column string, ev auditEvent) (created bool, err error) {
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := db.insertIgnore(tx.NewInsert().Model(row), keyCol).Exec(ctx)
		if err != nil {
			return err
		}
		n, err := affected(res)
		if err != nil {
			return err
		}
		// Why a copy of ev each run: a retried transaction runs again.
		e := ev
		created = n > 0
		if created {
			e.action += ".create"
			return db.audit(ctx, tx, e)
		}
		if _, err = tx.NewUpdate().Model(row).Column(column).WherePK().Exec(ctx); err != nil {
			return err
		}
		e.action += ".update"
		return db.audit(ctx, tx, e)
	})
	return created, err
}

// deleteWithRules deletes the row of model whose col equals value, then the
// access rules whose ruleCol equals it, in one transaction; ErrNotExist when
// no row matched; ev goes in the audit log. The parent goes first so that
// its row lock orders this after any AddRules holding it, and the rule
// delete sees those rules.
func (db *DB) deleteWithRules(ctx context.Context, model any, col, ruleCol, value string, ev auditEvent) error {
	return db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := deleted(tx.NewDelete().Model(model).Where("? = ?", bun.Ident(col), value).Exec(ctx)); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*ruleRow)(nil)).Where("? = ?", bun.Ident(ruleCol), value).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := affected(res); err == nil && n > 0 {
			ev.detail = map[string]any{"rulesDeleted": n}
		}
		return db.audit(ctx, tx, ev)
	})
}

// forUpdate locks the selected rows until the transaction ends. SQLite has
// no row locks and needs none: its transactions take the write lock at BEGIN.
func (db *DB) forUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if db.kind == sqliteKind {
		return q
	}
	return q.For("UPDATE")
}

// affected reports the number of rows a statement changed.
func affected(res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return n, nil
}

// deleted turns the result of a DELETE into ErrNotExist when it matched no
// row.
func deleted(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := affected(res)
	if err == nil && n == 0 {
		err = ErrNotExist
	}
	return err
}

// checkLen rejects empty (when required) or over-long values that the
// schema cannot hold the same way on every dialect.
func checkLen(what, v string, max int, required bool) error {
	if required && v == "" {
		return fmt.Errorf("storage: %s is empty: %w", what, ErrInvalid)
	}
	if len(v) > max {
		return fmt.Errorf("storage: %s is longer than %d bytes: %w", what, max, ErrInvalid)
	}
	return nil
}

// SQL returns the underlying database handle, for tools and tests that need
// plain SQL, such as making a database the way an older release did.
func (db *DB) SQL() *sql.DB { return db.bun.DB }
