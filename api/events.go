package api

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vitrine/vitrine/engine/schema"
)

// Event is what listeners receive: the event name (`image.get`,
// `images.post`, `stats.get`...) and the request it belongs to.
type Event struct {
	// Name is `<resource>.<method>`.
	Name string
	// Stats is the `custom` object of the stats response; stats.get
	// listeners may add to it.
	Stats map[string]any
	call  *call
	stop  bool
}

// User is the `<user>` of the path, "" on routes without one.
func (e *Event) User() string { return e.call.params["user"] }

// ImageIdentifier is the `<image>` of the path, "" on routes without one.
func (e *Event) ImageIdentifier() string { return e.call.params["image"] }

// PublicKey is the public key the request acts with.
func (e *Event) PublicKey() string { return e.call.publicKey }

// StopPropagation skips the remaining listeners of this event (the resource
// itself still runs).
func (e *Event) StopPropagation() { e.stop = true }

// Listener handles an event; a returned error ends the request with that
// error (an *Error for a chosen status, anything else is a 500).
type Listener func(ctx context.Context, ev *Event) error

// Events returns the name of every event a Server fires, sorted: one
// `<resource>.<method>` for each route and each method that route serves
// (HEAD wherever GET is served). A request the router refuses (unknown
// path, 405, 501, a CORS preflight) fires none. Package filters keeps the
// same list for the manifests of guest listeners; a test in package main
// compares the two.
func Events() []string {
	// The routes' handlers are method values of a server; building the
	// table on an empty one reads only which methods each route serves.
	var names []string
	for _, rt := range (&Server{}).buildRoutes() {
		for m := range knownMethods {
			// OPTIONS fires nothing, even where a route serves it
			// (resumable uploads' discovery answers before any event).
			if _, ok := rt.handler(m); ok && m != http.MethodOptions {
				names = append(names, rt.name+"."+strings.ToLower(m))
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

type subscription struct {
	pattern  string
	priority int
	seq      int
	fn       Listener
}

// Bus dispatches events to listeners subscribed by name (`image.get`), by
// resource (`image.*`), by method (`*.get`) or to everything (`*`), as
// schema.MatchEvent matches them (the filters check a listener's manifest
// with it too). Higher priority runs first;
// equal priorities run in subscription order.
type Bus struct {
	mu      sync.RWMutex
	subs    []subscription
	sources []ListenerSource
}

// Subscription is one listener of a ListenerSource: it runs once for an
// event matching any of its patterns.
type Subscription struct {
	Patterns []string
	Priority int
	Listener Listener
}

// ListenerSource supplies listeners that may change while the server runs
// (WebAssembly filters after a reload). The bus asks it on every event, so
// one event sees one consistent set.
type ListenerSource interface {
	Subscriptions() []Subscription
}

// AddSource makes the bus run the listeners of src beside those given to
// On; at equal priority, those given to On run first.
func (b *Bus) AddSource(src ListenerSource) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sources = append(b.sources, src)
}

// On subscribes fn to events matching pattern.
func (b *Bus) On(pattern string, priority int, fn Listener) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs = append(b.subs, subscription{pattern: pattern, priority: priority, seq: len(b.subs), fn: fn})
}

// Fire runs every listener of ev.Name in order and returns the first error.
func (b *Bus) Fire(ctx context.Context, ev *Event) error {
	b.mu.RLock()
	var run []subscription
	for _, s := range b.subs {
		if schema.MatchEvent(s.pattern, ev.Name) {
			run = append(run, s)
		}
	}
	sources := b.sources
	b.mu.RUnlock()
	seq := len(run)
	for _, src := range sources {
		for _, sub := range src.Subscriptions() {
			for _, p := range sub.Patterns {
				if schema.MatchEvent(p, ev.Name) {
					seq++
					run = append(run, subscription{pattern: p, priority: sub.Priority, seq: 1<<30 + seq, fn: sub.Listener})
					break
				}
			}
		}
	}
	sort.SliceStable(run, func(i, j int) bool {
		if run[i].priority != run[j].priority {
			return run[i].priority > run[j].priority
		}
		return run[i].seq < run[j].seq
	})
	for _, s := range run {
		if err := s.fn(ctx, ev); err != nil {
			return err
		}
		if ev.stop {
			return nil
		}
	}
	return nil
}
