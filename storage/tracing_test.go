package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/vitrine/vitrine/storage"
)

// TestTraceSpans: under a recording span, each SQL statement and each blob
// operation is a client span of its own, described without the statement's
// values, and a missing row or blob is an answer, not an error; with no
// recording span (tracing off, or no parent) a statement gets none.
func TestTraceSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	db := openDB(t, "sqlite::memory:", nil)
	blobs := openBlobs(t, "mem://")
	if _, err := db.PutKey(context.Background(), storage.Key{PublicKey: "untraced", PrivateKey: "s"}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans without a recording parent", n)
	}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	if _, err := db.PutKey(ctx, storage.Key{PublicKey: "alice-key", PrivateKey: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Key(ctx, "nobody"); err == nil {
		t.Fatal("a missing key was found")
	}
	if err := blobs.Put(ctx, "k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.Get(ctx, "missing"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("get a missing blob: %v", err)
	}
	parent.End()

	var sql, blob []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "request" || strings.HasPrefix(sp.Name(), "gocloud.dev/") { // gocloud.dev's own, under ours
			continue
		}
		if sp.Parent().SpanID() != parent.SpanContext().SpanID() || sp.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %q: parent %v, kind %v", sp.Name(), sp.Parent().SpanID(), sp.SpanKind())
		}
		if sp.Status().Code == codes.Error {
			t.Errorf("span %q: error status %q", sp.Name(), sp.Status().Description)
		}
		attrs := map[attribute.Key]string{}
		for _, a := range sp.Attributes() {
			attrs[a.Key] = a.Value.String()
		}
		switch {
		case attrs["db.system.name"] != "":
			sql = append(sql, sp)
			if attrs["db.system.name"] != "sqlite" || attrs["db.operation.name"] == "" || !strings.HasPrefix(sp.Name(), attrs["db.operation.name"]) {
				t.Errorf("SQL span %q: %v", sp.Name(), attrs)
			}
			for _, a := range sp.Attributes() {
				if strings.Contains(a.Value.String(), "alice-key") || strings.Contains(a.Value.String(), "nobody") {
					t.Errorf("SQL span %q carries a value: %v", sp.Name(), a)
				}
			}
		case strings.HasPrefix(sp.Name(), "blob "):
			blob = append(blob, sp)
			if attrs["vitrine.blob.operation"] != strings.TrimPrefix(sp.Name(), "blob ") || attrs["vitrine.blob.key"] == "" {
				t.Errorf("blob span %q: %v", sp.Name(), attrs)
			}
		default:
			t.Errorf("unexpected span %q", sp.Name())
		}
	}
	if len(sql) < 2 || len(blob) != 2 {
		t.Errorf("%d SQL spans (want 2 or more) and %d blob spans (want 2)", len(sql), len(blob))
	}
}
