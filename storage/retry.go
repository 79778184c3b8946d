package storage

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"github.com/uptrace/bun"
)

// Transactions that the database ends with "try again" (a deadlock, a
// serialization failure, SQLite busy past its timeout) are run again here,
// in one place for every dialect: MariaDB picks a deadlock's victim among
// concurrent uploads of one user as a matter of course, and its client
// should not see a 500 for it.

// txAttempts is how many times a transaction runs before its "try
// again" goes to the caller, as a 503 with Retry-After.
const txAttempts = 5

// retryable reports whether err is the database asking for the
// transaction to be run again.
func retryable(err error) bool {
	var (
		me *mysql.MySQLError
		pe *pgconn.PgError
		se sqlite3.Error
	)
	switch {
	case errors.As(err, &me):
		// ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
		return me.Number == 1213 || me.Number == 1205
	case errors.As(err, &pe):
		// deadlock_detected, serialization_failure.
		return pe.Code == "40P01" || pe.Code == "40001"
	case errors.As(err, &se):
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}

// TxRetries counts the transactions run again since the DB opened.
func (db *DB) TxRetries() int64 { return db.txRetries.Load() }

// runTx runs fn in a transaction, again (after a short jittered pause)
// while the database answers that it must be tried again, up to
// txAttempts; fn must start from nothing on each run (its writes of the
// run before were rolled back). After the last, the error is an
// *UnavailableError (503, Retry-After).
func (db *DB) runTx(ctx context.Context, opts *sql.TxOptions, fn func(ctx context.Context, tx bun.Tx) error) error {
	var err error
	for attempt := range txAttempts {
		if err = db.bun.RunInTx(ctx, opts, fn); err == nil || !retryable(err) {
			return err
		}
		db.txRetries.Add(1)
		if attempt == txAttempts-1 {
			break
		}
		// 2-4 ms, doubling: a deadlock's other party commits meanwhile.
		pause := (2 * time.Millisecond << attempt)
		select {
		case <-ctx.Done():
			return &UnavailableError{Backend: "database", Op: "transaction", Err: errors.Join(err, ctx.Err())}
		case <-time.After(pause + rand.N(pause)):
		}
	}
	return &UnavailableError{Backend: "database", Op: "transaction", Err: err}
}

// insertFresh inserts row (keyed by user_name and identifier) unless a
// row of its key is there already; done is false then, and the caller
// replaces it.
func insertFresh(ctx context.Context, db *DB, tx bun.Tx, row any) (done bool, err error) {
	res, err := db.insertIgnore(tx.NewInsert().Model(row), "identifier").Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := affected(res)
	return n == 1, err
}
