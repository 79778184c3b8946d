package filters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
)

// Host loads the filters of a directory and keeps the current Set. It is
// safe for concurrent use: readers take Current, Reload swaps it.
type Host struct {
	cfg   Config
	cache wazero.CompilationCache
	cur   atomic.Pointer[Set]

	// mu serialises reloads and guards counters.
	mu sync.Mutex
	// counters are kept per filter name across reloads, for the life of
	// the process (ABI.md, stats_add).
	counters map[string]*counters
	// stopSweep ends the goroutine that closes idle instances.
	stopSweep chan struct{}
}

// New validates cfg, opens the compilation cache and loads every filter of
// cfg.Dir. Filters that fail to load are reported in the Set, not as an
// error: one broken filter must not stop the service. The error is for an
// unusable configuration or an unreadable directory.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg.withDefaults(), counters: map[string]*counters{}}
	h.cache = wazero.NewCompilationCache()
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("filters: compilation cache: %w", err)
		}
		h.cache = c
	}
	h.cur.Store(&Set{filters: map[string]*Filter{}, failures: map[string]string{}})
	h.stopSweep = make(chan struct{})
	go h.sweep(h.stopSweep)
	if _, err := h.Reload(ctx); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// sweep closes the instances of the current filters that have been idle
// for longer than Config.IdleTimeout, until stop is closed.
func (h *Host) sweep(stop <-chan struct{}) {
	t := time.NewTicker(max(h.cfg.IdleTimeout/2, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			for _, f := range h.Current().filters {
				f.pool.sweep(now)
			}
		}
	}
}

// Current returns the Set in use. A caller keeps using the Set (and the
// filters) it took even when a reload swaps in another.
func (h *Host) Current() *Set { return h.cur.Load() }

// Reload reads the directory again: filters whose content hash changed,
// new ones and removed ones are loaded or dropped, unchanged ones kept as
// they are (with their warm instances). A filter whose new version fails to
// load is refused with a logged reason and its old version keeps serving.
// The new Set replaces the old in one step; filters that left drop their
// warm instances after Config.RetireGrace and are released once no caller
// holds them: a caller that resolved one before the reload can still call
// it.
func (h *Host) Reload(ctx context.Context) (*Set, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.Current()
	next := &Set{filters: map[string]*Filter{}, failures: map[string]string{}}
	if h.cfg.Dir != "" {
		entries, err := os.ReadDir(h.cfg.Dir)
		if err != nil {
			return old, fmt.Errorf("filters: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			name := e.Name()
			f, err := h.loadOne(ctx, filepath.Join(h.cfg.Dir, name), old.filters[name])
			if err != nil {
				next.failures[name] = err.Error()
				h.cfg.Logger.Error("filter refused", "filter", name, "reason", err, "keeps", old.filters[name] != nil)
			}
			if f != nil {
				next.filters[name] = f
			}
		}
	}
	next.index()
	h.cur.Store(next)
	for name, f := range old.filters {
		if next.filters[name] != f {
			h.cfg.Logger.Info("filter retired", "filter", name, "hash", f.hash)
			time.AfterFunc(h.cfg.RetireGrace, f.retire)
		}
	}
	for name, f := range next.filters {
		if old.filters[name] != f {
			h.cfg.Logger.Info("filter loaded", "filter", name, "kind", f.manifest.Kind,
				"version", f.manifest.Version, "hash", f.hash)
		}
	}
	return next, nil
}

// loadOne loads the filter in dir unless prev already is its content. On
// failure it returns prev (which keeps serving) with the reason.
func (h *Host) loadOne(ctx context.Context, dir string, prev *Filter) (*Filter, error) {
	src, err := readSource(dir)
	if err != nil {
		return prev, loadErr(filepath.Base(dir), err)
	}
	if prev != nil && prev.hash == src.hash {
		return prev, nil
	}
	name := filepath.Base(dir)
	ctrs := h.counters[name]
	if ctrs == nil {
		ctrs = &counters{}
		h.counters[name] = ctrs
	}
	f, err := load(ctx, h.cfg, h.cache, src, ctrs)
	if err != nil {
		return prev, loadErr(name, err)
	}
	return f, nil
}

// Close closes every filter and the compilation cache. It waits for the
// calls still running to finish, at most the longest filter timeout and a
// second; the calls still running then fail.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopSweep != nil {
		close(h.stopSweep)
		h.stopSweep = nil
	}
	wait := time.Second
	for _, f := range h.Current().filters {
		wait = max(wait, f.timeout+time.Second)
	}
	deadline := time.After(wait)
	for _, f := range h.Current().filters {
		f.drain(deadline)
	}
	h.cur.Store(&Set{filters: map[string]*Filter{}, failures: map[string]string{}})
	return h.cache.Close(context.Background())
}

// Check loads the filter in dir on its own, as the server would, and
// closes it again: `vitrine filter check`. The error says why it would be
// refused.
func Check(ctx context.Context, cfg Config, dir string) (*Manifest, error) {
	f, err := Open(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	defer f.close()
	return f.manifest, nil
}

// Open loads the filter in dir on its own, outside any Host: `vitrine
// filter test`. The caller closes it with Close.
func Open(ctx context.Context, cfg Config, dir string) (*Filter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	src, err := readSource(dir)
	if err != nil {
		return nil, loadErr(filepath.Base(dir), err)
	}
	cfg = cfg.withDefaults()
	f, err := load(ctx, cfg, nil, src, nil)
	if err != nil {
		return nil, loadErr(filepath.Base(dir), err)
	}
	return f, nil
}

// Close closes a filter opened with Open.
func (f *Filter) Close() { f.close() }

// Set is one consistent generation of loaded filters.
type Set struct {
	filters map[string]*Filter
	// failures maps folder names to the reason their current files were
	// refused (the old version, if any, is still in filters).
	failures  map[string]string
	listeners []Listener
}

// index builds the listener list, highest priority first, then by name.
func (s *Set) index() {
	for _, f := range s.filters {
		if f.manifest.Kind == KindListener {
			s.listeners = append(s.listeners, Listener{f})
		}
	}
	sort.Slice(s.listeners, func(i, j int) bool {
		a, b := s.listeners[i], s.listeners[j]
		if a.Priority() != b.Priority() {
			return a.Priority() > b.Priority()
		}
		return a.Name() < b.Name()
	})
}

// Transformation returns the transformation filter named name.
func (s *Set) Transformation(name string) (Transformation, bool) {
	f, ok := s.filters[name]
	if !ok || f.manifest.Kind != KindTransformation {
		return Transformation{}, false
	}
	return Transformation{f}, true
}

// TransformationNames returns the names of the transformation filters, sorted.
func (s *Set) TransformationNames() []string {
	var out []string
	for n, f := range s.filters {
		if f.manifest.Kind == KindTransformation {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Listeners returns the listener filters, highest priority first.
func (s *Set) Listeners() []Listener { return s.listeners }

// Status is what GET /filters shows about one filter folder.
type Status struct {
	Name        string           `json:"name"`
	Loaded      bool             `json:"loaded"`
	ContentHash string           `json:"contentHash,omitempty"`
	Manifest    *Manifest        `json:"manifest,omitempty"`
	Error       string           `json:"error,omitempty"`
	Stats       *Stats           `json:"stats,omitempty"`
	Counters    map[string]int64 `json:"counters,omitempty"`
}

// Status lists every filter folder: loaded filters with their manifest,
// content hash, counters and, when their files changed into something
// refused, the reason; folders that never loaded with their error.
func (s *Set) Status() []Status {
	out := []Status{}
	for name, f := range s.filters {
		st := f.Stats()
		out = append(out, Status{Name: name, Loaded: true, ContentHash: f.hash, Manifest: f.manifest,
			Error: s.failures[name], Stats: &st, Counters: f.Counters()})
	}
	for name, reason := range s.failures {
		if _, ok := s.filters[name]; !ok {
			out = append(out, Status{Name: name, Error: reason})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Counters returns every loaded filter's stats_add counters by filter name,
// for GET /stats `custom`.
func (s *Set) Counters() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for name, f := range s.filters {
		if c := f.Counters(); len(c) > 0 {
			out[name] = c
		}
	}
	return out
}
