package filters

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recEvent is an Event as a service would give it, recording what the
// listeners change. It stands in for api's event, which this package may
// not import; the api and e2e tests run the real one.
type recEvent struct {
	name     string
	body     []byte
	info     map[string]any
	md       map[string]any
	hasImage bool
	infoErr  error
	stats    map[string]map[string]any // by filter, by name
	checked  int                       // CheckBody calls
	maxMD    int                       // CheckMetadata refuses a document larger than this; 0: no limit
	mu       sync.Mutex
}

type statusErr int

func (s statusErr) Error() string   { return http.StatusText(int(s)) }
func (s statusErr) HTTPStatus() int { return int(s) }

func (e *recEvent) EventName() string       { return e.name }
func (e *recEvent) User() string            { return "alice" }
func (e *recEvent) PublicKey() string       { return "alice" }
func (e *recEvent) ImageIdentifier() string { return "" }
func (e *recEvent) ImageInfo(context.Context) (map[string]any, error) {
	return e.info, e.infoErr
}
func (e *recEvent) Body(context.Context) ([]byte, error) { return e.body, nil }
func (e *recEvent) MaxBodyBytes() int64                  { return 100 }
func (e *recEvent) CheckBody(_ context.Context, b []byte) error {
	e.mu.Lock()
	e.checked++
	e.mu.Unlock()
	switch {
	case len(b) > 100:
		return statusErr(413)
	case !strings.HasPrefix(string(b), "IMG"):
		return statusErr(415)
	}
	return nil
}
func (e *recEvent) SetBody(b []byte) { e.body = b }
func (e *recEvent) Metadata(context.Context) (map[string]any, error) {
	if !e.hasImage {
		return nil, nil
	}
	return e.md, nil
}
func (e *recEvent) CheckMetadata(md map[string]any) error {
	if b, _ := json.Marshal(md); e.maxMD > 0 && len(b) > e.maxMD {
		return statusErr(413)
	}
	return nil
}
func (e *recEvent) SetMetadata(md map[string]any) {
	if e.md == nil {
		e.md = map[string]any{}
	}
	for k, v := range md {
		e.md[k] = v
	}
}
func (e *recEvent) SetStat(filter, name string, v any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stats == nil {
		e.stats = map[string]map[string]any{}
	}
	if e.stats[filter] == nil {
		e.stats[filter] = map[string]any{}
	}
	e.stats[filter][name] = v
}

func loadListeners(t *testing.T, specs map[string][2]any) *Set {
	t.Helper()
	dir := t.TempDir()
	for name, s := range specs {
		extra := map[string]any{"events": []string{"*"}}
		for k, v := range s[1].(map[string]any) {
			extra[k] = v
		}
		kit(t, dir, name, KindListener, s[0].(string), extra)
	}
	set := newHost(t, dir, nil).Current()
	for _, st := range set.Status() {
		if !st.Loaded {
			t.Fatalf("%s not loaded: %s", st.Name, st.Error)
		}
	}
	return set
}

func TestListeners(t *testing.T) {
	t.Parallel()
	set := loadListeners(t, map[string][2]any{
		"rejecter": {"reject", map[string]any{"events": []string{"images.post"}, "settings": map[string]any{"message": "Image too small"}}},
		"tagger":   {"tag", map[string]any{"priority": 10}},
		"stats":    {"stats", map[string]any{"events": []string{"stats.get"}}},
		"replacer": {"replace", map[string]any{"events": []string{"images.post"}, "settings": map[string]any{"replacement": "IMG2"}}},
		"bigRepl":  {"replace", map[string]any{"events": []string{"images.post"}, "settings": map[string]any{"replacement": "IMG" + strings.Repeat("x", 200)}}},
		"optional": {"tagThenFail", map[string]any{"fatal": false, "priority": 20}},
		"fatal":    {"fail", map[string]any{"events": []string{"metadata.get"}}},
		"hang":     {"hang", map[string]any{"events": []string{"image.get"}, "limits": map[string]any{"timeoutMs": 100}}},
		"echo":     {"echo", map[string]any{"events": []string{"metadata.put"}}},
		"optTag":   {"tag", map[string]any{"fatal": false}},
	})
	byName := map[string]Listener{}
	var order []string
	for _, l := range set.Listeners() {
		byName[l.Name()] = l
		order = append(order, l.Name())
	}
	if strings.Join(order[:2], ",") != "optional,tagger" {
		t.Fatalf("listener order %v: want priority 20, then 10, then by name", order)
	}
	ctx := context.Background()

	t.Run("reject", func(t *testing.T) {
		err := byName["rejecter"].Handle(ctx, &recEvent{name: "images.post"})
		var fe *Error
		if !errors.As(err, &fe) || fe.HTTPStatus() != 403 || fe.PublicMessage() != "Image too small" {
			t.Fatalf("err = %v", err)
		}
		if byName["rejecter"].Stats().Rejections != 1 {
			t.Fatalf("stats = %+v", byName["rejecter"].Stats())
		}
	})
	t.Run("tag", func(t *testing.T) {
		ev := &recEvent{name: "images.post", info: map[string]any{"width": 640}}
		if err := byName["tagger"].Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if ev.md["taggedBy"] != "kit" || ev.md["width"] != 640.0 {
			t.Fatalf("metadata = %v", ev.md)
		}
		if c := set.Counters()["tagger"]["tagged"]; c != 1 {
			t.Fatalf("counter = %d", c)
		}
	})
	t.Run("the service's own failure wins, even over an optional listener", func(t *testing.T) {
		for _, name := range []string{"tagger", "optTag"} {
			err := byName[name].Handle(ctx, &recEvent{name: "images.post", infoErr: statusErr(415)})
			if err != statusErr(415) {
				t.Fatalf("%s: err = %v, want the service's 415", name, err)
			}
		}
		if st := byName["tagger"].Stats(); st.Errors != 0 {
			t.Fatalf("a client's bad upload counted as a filter error: %+v", st)
		}
	})
	t.Run("tag that would make the merged metadata too large is refused", func(t *testing.T) {
		// The tag alone fits the limit; merged with the upload's metadata it
		// does not, and the merged document is what the image gets.
		prior := strings.Repeat("x", 40)
		ev := &recEvent{name: "images.post", info: map[string]any{"width": 640}, hasImage: true,
			md: map[string]any{"prior": prior}, maxMD: 70}
		if err := byName["tagger"].Handle(ctx, ev); !errors.Is(err, ErrFailed) {
			t.Fatalf("err = %v, want the tagger to fail on its refused metadata_set", err)
		}
		if _, tagged := ev.md["taggedBy"]; tagged || len(ev.md) != 1 {
			t.Fatalf("metadata = %v, want the upload's own only", ev.md)
		}
	})
	t.Run("tag refused outside uploads and metadata writes", func(t *testing.T) {
		err := byName["tagger"].Handle(ctx, &recEvent{name: "image.get"})
		if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "returned 14") { // 10 - ERR_UNAVAILABLE
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("stats", func(t *testing.T) {
		ev := &recEvent{name: "stats.get"}
		if err := byName["stats"].Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(ev.stats); string(b) != `{"stats":{"kit":{"answer":42}}}` {
			t.Fatalf("stats = %s", b)
		}
	})
	t.Run("replace", func(t *testing.T) {
		ev := &recEvent{name: "images.post", body: []byte("IMG1")}
		if err := byName["replacer"].Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if string(ev.body) != "IMG2" {
			t.Fatalf("body = %q", ev.body)
		}
	})
	t.Run("replacement past the body limit is refused before it is checked", func(t *testing.T) {
		ev := &recEvent{name: "images.post", body: []byte("IMG1")}
		if err := byName["bigRepl"].Handle(ctx, ev); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "returned -5") {
			t.Fatalf("err = %v, want the guest's ERR_LIMIT", err)
		}
		if string(ev.body) != "IMG1" || ev.checked != 1 {
			t.Fatalf("body = %q after %d checks; want the original, only the junk checked", ev.body, ev.checked)
		}
	})
	t.Run("optional failure leaves nothing behind", func(t *testing.T) {
		ev := &recEvent{name: "images.post"}
		if err := byName["optional"].Handle(ctx, ev); err != nil {
			t.Fatalf("optional listener failure must be skipped: %v", err)
		}
		if ev.md != nil {
			t.Fatalf("metadata of a failed listener applied: %v", ev.md)
		}
	})
	t.Run("fatal failure", func(t *testing.T) {
		if err := byName["fatal"].Handle(ctx, &recEvent{name: "metadata.get"}); !errors.Is(err, ErrFailed) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("never returns", func(t *testing.T) {
		start := time.Now()
		err := byName["hang"].Handle(ctx, &recEvent{name: "image.get"})
		var fe *Error
		if !errors.As(err, &fe) || fe.HTTPStatus() != 504 || fe.PublicMessage() != "Filter hang timed out" {
			t.Fatalf("err = %v", err)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("the call was not stopped")
		}
	})
	t.Run("event object and metadata", func(t *testing.T) {
		ev := &recEvent{name: "metadata.put", hasImage: true, md: map[string]any{"a": 1}}
		msg := rejection(t, byName["echo"].Handle(ctx, ev))
		var got struct {
			Event        map[string]any `json:"event"`
			Metadata     string         `json:"metadata"`
			MetadataCode int            `json:"metadataCode"`
		}
		if err := json.Unmarshal([]byte(msg), &got); err != nil {
			t.Fatal(err)
		}
		if got.Event["event"] != "metadata.put" || got.Event["user"] != "alice" || got.Metadata != `{"a":1}` {
			t.Fatalf("guest saw %s", msg)
		}
		if _, ok := got.Event["image"]; ok {
			t.Fatalf("no image info was given, yet the event has one: %s", msg)
		}
		msg = rejection(t, byName["echo"].Handle(ctx, &recEvent{name: "metadata.put"}))
		if !strings.Contains(msg, `"metadataCode":-1`) {
			t.Fatalf("metadata_get without an image: %s", msg)
		}
	})
}
