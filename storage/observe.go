package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// ObserveFunc receives how long one database query or blob operation took:
// op is the SQL operation (SELECT, INSERT, ...) or the blob operation (get,
// put, delete, ...); err is the operation's error, nil on success (a
// missing row or blob is not an error here).
type ObserveFunc func(op string, d time.Duration, err error)

// Observe makes f receive the duration of every query; call it before use.
func (db *DB) Observe(f ObserveFunc) { db.bun = db.bun.WithQueryHook(queryHook(f)) }

// queryHook adapts an ObserveFunc to bun's query hooks.
type queryHook ObserveFunc

func (h queryHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (h queryHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	err := e.Err
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	h(e.Operation(), time.Since(e.StartTime), err)
}

// Observe makes f receive the duration of every blob operation; call it
// before use.
func (b *Blobs) Observe(f ObserveFunc) { b.observe = f }

// Intercept makes f run before every blob operation (op is get, put,
// delete, attributes, list or ping); an error from f fails the operation
// without touching the store. It lets a test hold an operation at a chosen
// point, or fail it, to decide the order of concurrent requests; call it
// before use.
func (b *Blobs) Intercept(f func(ctx context.Context, op, key string) error) { b.intercept = f }

// timed reports a blob operation that started at start and ended with
// *err.
func (b *Blobs) timed(op string, start time.Time, err *error) {
	if b.observe == nil {
		return
	}
	e := *err
	if errors.Is(e, ErrNotExist) {
		e = nil
	}
	b.observe(op, time.Since(start), e)
}

var _ bun.QueryHook = queryHook(nil)
