package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// timeoutHook bounds every statement run through bun to a duration: a
// statement whose context has no earlier deadline gets one.
//
// Why a hook: it bounds every query in one place, including those inside
// transactions. BEGIN is left alone, because database/sql ties a
// transaction's lifetime to the context it began with; its statements are
// bounded one by one. A query built with bun's builders is done once it
// returns (no method here streams bun's Rows), so its timer is stopped at
// once; a raw query's rows may still be read after the hook runs, so its
// timer is left to expire.
type timeoutHook time.Duration

type unboundedKey struct{}

// unbounded marks ctx so that its statements get no timeout (schema
// migrations: one step may rewrite a large table).
func unbounded(ctx context.Context) context.Context {
	return context.WithValue(ctx, unboundedKey{}, true)
}

type cancelKey struct{}

func (h timeoutHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if e.Query == "BEGIN" || ctx.Value(unboundedKey{}) != nil {
		return ctx
	}
	d := time.Duration(h)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	if e.Stash == nil {
		e.Stash = map[any]any{}
	}
	e.Stash[cancelKey{}] = cancel
	return ctx
}

func (h timeoutHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if cancel, ok := e.Stash[cancelKey{}].(context.CancelFunc); ok && e.IQuery != nil {
		cancel()
	}
}

var _ bun.QueryHook = timeoutHook(0)
