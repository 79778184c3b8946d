package filters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

// spanRecord is one span a spanRecorder was asked to start.
type spanRecord struct {
	name  string
	attrs map[string]string
	ends  int
	err   error
}

// spanRecorder is a Config.Trace that keeps the spans it starts.
type spanRecorder struct {
	mu    sync.Mutex
	spans []*spanRecord
}

func (r *spanRecorder) start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	s := &spanRecord{name: name, attrs: map[string]string{}}
	for _, a := range attrs {
		s.attrs[string(a.Key)] = a.Value.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, s)
	return ctx, func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		s.ends++
		s.err = err
	}
}

// take returns the spans started since the last take, as "name: outcome"
// ("ok"; the kind of an *Error; "error" for another error, such as the
// guest's trap a run span records; or how often a span not ended exactly
// once was), and fails when a span lacks the filter's attributes.
func (r *spanRecorder) take(t *testing.T, filter string) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.spans {
		want := map[string]string{"vitrine.filter.name": filter, "vitrine.filter.version": "1.0.0",
			"vitrine.filter.kind": KindTransformation}
		if fmt.Sprint(s.attrs) != fmt.Sprint(want) {
			t.Errorf("%s: attributes %v, want %v", s.name, s.attrs, want)
		}
		outcome := "ok"
		switch {
		case s.ends != 1:
			outcome = fmt.Sprintf("ended %d times", s.ends)
		case s.err != nil:
			outcome = "error"
			if fe := (*Error)(nil); errors.As(s.err, &fe) {
				outcome = fe.Kind.String()
			}
		}
		out = append(out, s.name+": "+outcome)
	}
	r.spans = nil
	return out
}

// TestTrace: with Config.Trace set, a call's wait and run, and a
// reservation, are spans with the filter's attributes, each ended once
// with its outcome.
func TestTrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "ok", callModule(KindTransformation, i32c(0)), map[string]any{"kind": KindTransformation})
	writeFilter(t, dir, "trap", callModule(KindTransformation, concat(opUnreachable, i32c(0))), map[string]any{"kind": KindTransformation})
	var rec spanRecorder
	set := newHost(t, dir, func(c *Config) { c.Trace = rec.start }).Current()
	if got := rec.take(t, ""); len(got) != 0 {
		t.Fatalf("loading started spans: %q", got)
	}
	for _, c := range []struct {
		filter string
		want   []string
	}{
		{"ok", []string{"filter.wait: ok", "filter.run: ok"}},
		{"trap", []string{"filter.wait: ok", "filter.run: error"}},
	} {
		t.Run(c.filter, func(t *testing.T) {
			tr, ok := set.Transformation(c.filter)
			if !ok {
				t.Fatalf("%s not loaded: %+v", c.filter, set.Status())
			}
			_, _ = tr.Transform(context.Background(), testImage(2, 2, 1), nil, nil)
			if got := rec.take(t, c.filter); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("spans %q, want %q", got, c.want)
			}
		})
	}
	t.Run("reserve", func(t *testing.T) {
		tr, _ := set.Transformation("ok")
		rctx, release, err := tr.Reserve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Transform(rctx, testImage(2, 2, 1), nil, nil); err != nil {
			t.Fatal(err)
		}
		release()
		want := []string{"filter.reserve: ok", "filter.wait: ok", "filter.run: ok"}
		if got := rec.take(t, "ok"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("spans %q, want %q", got, want)
		}
	})
}
