package storage

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// startSpan starts a span named name as a child of ctx's span on otel's
// global provider: a no-op one, and a no-op span, while tracing is off.
func startSpan(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return otel.Tracer("github.com/vitrine/vitrine").Start(ctx, name, opts...)
}

// traceHook gives every SQL statement run through bun a client span, named
// and described per OpenTelemetry's database conventions: db.system.name,
// db.operation.name and db.collection.name. Never db.query.text: bun
// formats the values into the statement (user names, image ids, sealed
// secrets), and a trace must not carry them. Nothing outside a recording
// span (so nothing while tracing is off).
type traceHook struct{ system attribute.KeyValue }

type spanKey struct{}

func (h traceHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	op := e.Operation()
	attrs := []attribute.KeyValue{h.system, semconv.DBOperationName(op)}
	name := op
	if t, ok := e.IQuery.(interface{ GetTableName() string }); ok && e.IQuery != nil {
		if table := t.GetTableName(); table != "" {
			attrs = append(attrs, semconv.DBCollectionName(table))
			name += " " + table
		}
	}
	ctx, span := startSpan(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if e.Stash == nil {
		e.Stash = map[any]any{}
	}
	e.Stash[spanKey{}] = span
	return ctx
}

func (h traceHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if span, ok := e.Stash[spanKey{}].(trace.Span); ok {
		err := e.Err
		if errors.Is(err, sql.ErrNoRows) {
			err = nil // an answer, not a failure
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

var _ bun.QueryHook = traceHook{}

// dbSystem is db.system.name for kind.
func dbSystem(k kind) attribute.KeyValue {
	switch k {
	case postgresKind:
		return semconv.DBSystemNamePostgreSQL
	case mysqlKind:
		return semconv.DBSystemNameMySQL
	}
	return semconv.DBSystemNameSQLite
}
