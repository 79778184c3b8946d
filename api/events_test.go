package api_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/vitrine/vitrine/api"
)

func TestStatsListenerAddsCustomData(t *testing.T) {
	e := newEnv(t, testConfig())
	var order []string
	e.srv.Bus.On("stats.*", 10, func(ctx context.Context, ev *api.Event) error {
		order = append(order, "low")
		ev.Stats["answer"] = 42
		return nil
	})
	e.srv.Bus.On("*", 20, func(ctx context.Context, ev *api.Event) error {
		if ev.Name == "stats.get" {
			order = append(order, "high")
		}
		return nil
	})
	r := e.get(e.url + "/stats")
	custom, _ := r.json(t)["custom"].(map[string]any)
	if custom["answer"] != 42.0 || len(order) != 2 || order[0] != "high" {
		t.Fatalf("custom %v, order %v", custom, order)
	}
}

func TestListenerCanRejectRequest(t *testing.T) {
	e := newEnv(t, testConfig())
	e.srv.Bus.On("images.post", 50, func(ctx context.Context, ev *api.Event) error {
		if ev.User() == "alice" {
			return &api.Error{Status: http.StatusForbidden, Msg: "Uploads are closed"}
		}
		return nil
	})
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 4, 4, 1))
	if r.StatusCode != 403 || r.errMessage(t) != "Uploads are closed" {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
}

func TestStatusUnavailable(t *testing.T) {
	e := newEnv(t, testConfig())
	e.db.Close()
	r := e.get(e.url + "/status")
	if m := r.json(t); r.StatusCode != 503 || m["database"] != false || m["storage"] != true {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
}

// TestEventsFired sends every method to a path of every route and checks
// that the events fired are exactly api.Events(): the list guest listeners
// are checked against (through package filters) names what the server
// really fires. A route added without a path here makes the test fail.
func TestEventsFired(t *testing.T) {
	paths := []string{
		"/", "/status", "/stats.json", "/transformations", "/s/abcdefg",
		"/users/alice", "/users/alice/quota", "/users/alice/images", "/users/alice/images/abc.png",
		"/users/alice/images/abc/metadata", "/users/alice/images/abc/meta.json",
		"/users/alice/images/abc/shorturls", "/users/alice/images/abc/shorturls/abcdefg", "/users/alice/images/abc/variants",
		"/images", "/groups", "/groups/g", "/filters", "/filters/reload", "/filters/duotone", "/filters/duotone/rollback",
		"/keys", "/keys/k", "/keys/k/access", "/keys/k/access/1", "/audit", "/usage",
		"/webhooks", "/webhooks/w", "/webhooks/w/ping", "/webhooks/w/deliveries", "/webhooks/w/deliveries/1",
		"/webhooks/w/deliveries/1/redeliver",
		"/users/alice/uploadtokens", "/users/alice/uploadtokens/3f2a9c4d1e0b7a65",
		"/users/alice/uploads", "/users/alice/uploads/0123456789abcdef0123456789abcdef",
		"/blocklist", "/blocklist/1", "/blocklist/1/remove",
		"/nowhere", "/users/alice/images/abc/unknown",
	}
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "SEARCH", "PATCH", "BREW"}
	cors := testConfig()
	cors.CORS.AllowedOrigins = []string{"*"}
	cases := []struct {
		name string
		cfg  api.Config
	}{
		{"without CORS", testConfig()},
		{"with CORS (preflights fire nothing)", cors},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.cfg)
			var mu sync.Mutex
			fired := map[string]bool{}
			// Above access control, and stopping the request there, so
			// that no resource runs.
			e.srv.Bus.On("*", 1000, func(ctx context.Context, ev *api.Event) error {
				mu.Lock()
				defer mu.Unlock()
				fired[ev.Name] = true
				return &api.Error{Status: http.StatusTeapot, Msg: "recorded"}
			})
			for _, p := range paths {
				for _, m := range methods {
					e.request(m, e.url+p, nil, "Origin", "https://example.com", "Access-Control-Request-Method", "GET")
					if m == http.MethodOptions {
						// Not a preflight either: a route that serves
						// OPTIONS (resumable uploads' discovery) fires
						// nothing all the same.
						e.request(m, e.url+p, nil)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			var got []string
			for n := range fired {
				got = append(got, n)
			}
			slices.Sort(got)
			if want := api.Events(); !slices.Equal(got, want) {
				t.Fatalf("fired %v\napi.Events() %v", got, want)
			}
		})
	}
}

// TestBusPatterns: the bus selects listeners by schema.MatchEvent, the
// matcher the filters check listeners' manifests with, for listeners given
// to On and those of a ListenerSource alike.
func TestBusPatterns(t *testing.T) {
	t.Parallel()
	patterns := []string{"image.get", "image.*", "*.get", "*", "images.get", "image*", "*.*"}
	for name, want := range map[string][]string{
		"image.get":   {"image.get", "image.*", "*.get", "*"},
		"image.head":  {"image.*", "*"},
		"images.post": {"*"},
	} {
		t.Run(name, func(t *testing.T) {
			var bus api.Bus
			var ran, ranSource []string
			for _, p := range patterns {
				bus.On(p, 0, func(context.Context, *api.Event) error { ran = append(ran, p); return nil })
			}
			bus.AddSource(patternSource{patterns, &ranSource})
			if err := bus.Fire(context.Background(), &api.Event{Name: name}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ran, want) || !slices.Equal(ranSource, want) {
				t.Errorf("ran %v and %v from the source, want %v", ran, ranSource, want)
			}
		})
	}
}

// patternSource subscribes one listener per pattern.
type patternSource struct {
	patterns []string
	ran      *[]string
}

func (s patternSource) Subscriptions() []api.Subscription {
	var subs []api.Subscription
	for _, p := range s.patterns {
		subs = append(subs, api.Subscription{Patterns: []string{p},
			Listener: func(context.Context, *api.Event) error { *s.ran = append(*s.ran, p); return nil }})
	}
	return subs
}
