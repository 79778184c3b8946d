package filters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
)

// Host loads the filters of a directory and keeps the current Set. It is
// safe for concurrent use: readers take Current, reloads swap it. Filters
// load in the background, one at a time, each within
// Config.CompileTimeout; the Set shows which are still loading.
type Host struct {
	cfg   Config
	cache wazero.CompilationCache
	cur   atomic.Pointer[Set]
	// ctx ends with Close, stopping the loads.
	ctx    context.Context
	cancel context.CancelFunc

	// mu serialises reading the directory and publishing Sets, and guards
	// the fields below.
	mu sync.Mutex
	// counters are kept per filter name across reloads, for the life of
	// the process (ABI.md, stats_add).
	counters map[string]*counters
	// stopSweep ends the goroutine that closes idle instances.
	stopSweep chan struct{}
	// jobs maps a folder name to the load of its current files, queued or
	// running; a job no longer here has its result dropped.
	jobs  map[string]*job
	queue []*job
	// failed maps a folder name to the content hash of files that failed
	// to load: a reload does not load them again until they change.
	failed map[string]string
	// pushed are the bundles deployed through the API by key (Deploy),
	// loaded beside the folders of Dir.
	pushed map[string]Bundle
	// checking lets one Check compile at a time.
	checking chan struct{}
	// working says a worker drains queue.
	working bool
	// compiling counts the loads under way that use the compilation cache
	// (the worker's and Check's): Close leaves the cache to the last.
	compiling int
	closed    bool
	// initial is closed once the loads Start queued have finished (or the
	// host closed): see Initial.
	initial chan struct{}
}

// Start validates cfg, opens the compilation cache, reads every filter
// folder of cfg.Dir and starts loading them in the background; it returns
// at once, with the filters "loading". Folders refused before compiling
// (an unreadable or invalid manifest, a module over cfg.MaxModuleBytes)
// are "failed" at once. The error is for an unusable configuration or an
// unreadable directory: one broken filter must not stop the service.
func Start(ctx context.Context, cfg Config) (*Host, error) {
	h, _, err := start(ctx, cfg)
	return h, err
}

// New is Start, then waits until every filter has loaded or failed (or ctx
// ends): the Set it leaves is complete.
func New(ctx context.Context, cfg Config) (*Host, error) {
	h, jobs, err := start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	wait(ctx, jobs)
	return h, nil
}

func start(ctx context.Context, cfg Config) (*Host, []*job, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	h := &Host{cfg: cfg.withDefaults(), counters: map[string]*counters{}, jobs: map[string]*job{}, failed: map[string]string{},
		pushed: map[string]Bundle{}, checking: make(chan struct{}, 1)}
	h.ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	h.cache = wazero.NewCompilationCache()
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			h.cancel()
			return nil, nil, fmt.Errorf("filters: compilation cache: %w", err)
		}
		h.cache = c
	}
	h.cur.Store(emptySet())
	h.stopSweep = make(chan struct{})
	go h.sweep(h.stopSweep)
	jobs, err := h.scan()
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	h.initial = make(chan struct{})
	go func() {
		defer close(h.initial)
		wait(h.ctx, jobs)
	}()
	return h, jobs, nil
}

// Initial is closed once every filter Start found has loaded or failed
// (each within Config.CompileTimeout), or the host closed: what an
// instance waits for before it says it is ready.
func (h *Host) Initial() <-chan struct{} { return h.initial }

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

// Reload reads the directory again and waits until the filters it queued
// have loaded or failed, or ctx ends; it returns the Set then current, in
// which filters still loading say so. Filters whose content hash did not
// change are kept as they are (with their warm instances); changed and new
// ones load in the background; removed ones are dropped at once. A changed
// filter's old version keeps serving until its new one is ready, and goes
// on serving when the new one fails (the reason is listed); files that
// failed are not loaded again until they change, unless they ran out of
// time (Config.CompileTimeout). Filters that left drop
// their warm instances after Config.RetireGrace and are released once no
// caller holds them: a caller that resolved one before the reload can
// still call it. The error is for an unreadable directory.
func (h *Host) Reload(ctx context.Context) (*Set, error) {
	jobs, err := h.scan()
	if err != nil {
		return h.Current(), err
	}
	wait(ctx, jobs)
	return h.Current(), nil
}

// StartReload is Reload without the wait (SIGHUP).
func (h *Host) StartReload() error {
	_, err := h.scan()
	return err
}

// wait waits until every job is done or ctx ends.
func wait(ctx context.Context, jobs []*job) {
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return
		}
	}
}

// scan reads the directory, publishes the Set that follows from it (new
// and changed filters loading, removed ones gone) and queues the loads. It
// returns the jobs the directory's current files wait for.
func (h *Host) scan() ([]*job, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errHostClosed
	}
	s := &scanning{h: h, old: h.Current(), next: emptySet(), seen: map[string]bool{}}
	if err := s.readDir(); err != nil {
		return nil, err
	}
	s.readPushed()
	h.forget(s.seen)
	h.publish(s.old, s.next)
	h.enqueue(s.queued)
	return s.waits, nil
}

// scanning is one scan under way: the Set it builds from the Set current
// before it, and the jobs it found. h.mu is held throughout.
type scanning struct {
	h         *Host
	old, next *Set
	// waits are the jobs of the current files, queued are those this scan
	// queued.
	waits, queued []*job
	// seen holds every key read, folder or bundle.
	seen map[string]bool
}

// readDir considers every filter folder of Dir, but those a bundle deployed
// through the API shadows. Its error is for an unreadable directory, before
// anything was considered.
func (s *scanning) readDir() error {
	h := s.h
	if h.cfg.Dir == "" {
		return nil
	}
	entries, err := os.ReadDir(h.cfg.Dir)
	if err != nil {
		return fmt.Errorf("filters: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name := e.Name()
		if _, pushed := h.pushed[name]; pushed {
			// Why the API's version wins: it is the one every instance
			// serves; a folder is one machine's (filters/README.md, Filters
			// through the API).
			h.cfg.Logger.Warn("filter folder shadowed by the version deployed through the API", "filter", name)
			continue
		}
		src, err := readSource(filepath.Join(h.cfg.Dir, name), h.cfg.MaxModuleBytes)
		s.consider(name, SourceDir, src, err)
	}
	return nil
}

// readPushed considers every bundle deployed through the API, in the order
// of their keys.
func (s *scanning) readPushed() {
	keys := make([]string, 0, len(s.h.pushed))
	for key := range s.h.pushed {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		b := s.h.pushed[key]
		src, err := b.source(s.h.cfg.MaxModuleBytes)
		s.next.targets[key] = b.Version
		s.consider(key, SourceAPI, src, err)
	}
}

// consider puts into the next Set what follows for the filter key from src
// (or from err, the error reading it), which comes from origin: refused,
// loading (a job already running for the same files, or a new one queued),
// kept as it serves, or failed as before.
func (s *scanning) consider(key, origin string, src *source, err error) {
	h, old, next := s.h, s.old, s.next
	s.seen[key] = true
	prev := old.filters[key]
	if prev != nil {
		next.filters[key] = prev // until a new version is ready
	}
	next.origins[key] = origin
	var m *Manifest
	if err == nil {
		m, err = checkManifest(h.cfg, src)
	}
	running := h.jobs[key]
	switch {
	case err != nil:
		if ng := (*NotGrantedError)(nil); errors.As(err, &ng) {
			next.unavailable[key], next.failedManifests[key] = ng.Error(), m
		}
		err = loadErr(key, err)
		next.failures[key] = err.Error()
		delete(h.jobs, key)
		delete(h.failed, key)
		h.cfg.Logger.Error("filter refused", "filter", key, "reason", err, "keeps", prev != nil)
	case running != nil && running.src.hash == src.hash:
		next.loading[key] = m
		s.waits = append(s.waits, running)
	case prev != nil && prev.hash == src.hash && prev.origin == src.origin:
		delete(h.jobs, key) // back to the version serving
	case h.failed[key] == src.hash:
		next.failures[key] = old.failures[key]
		if fm := old.failedManifests[key]; fm != nil {
			next.failedManifests[key] = fm
		}
		delete(h.jobs, key)
	default:
		j := &job{name: key, src: src, done: make(chan struct{})}
		h.jobs[key] = j
		next.loading[key] = m
		s.waits = append(s.waits, j)
		s.queued = append(s.queued, j)
		h.cfg.Logger.Info("filter loading", "filter", key, "source", src.origin, "hash", src.hash, "bytes", len(src.wasm))
	}
}

// forget drops the jobs and the failed files of the keys a scan no longer
// saw. h.mu must be held.
func (h *Host) forget(seen map[string]bool) {
	for name := range h.jobs {
		if !seen[name] {
			delete(h.jobs, name)
		}
	}
	for name := range h.failed {
		if !seen[name] {
			delete(h.failed, name)
		}
	}
}

// publish indexes next, makes it current and retires the filters of old
// that next no longer holds. h.mu must be held.
func (h *Host) publish(old, next *Set) {
	next.index()
	h.cur.Store(next)
	for name, f := range old.filters {
		if next.filters[name] != f {
			h.cfg.Logger.Info("filter retired", "filter", name, "hash", f.hash)
			time.AfterFunc(h.cfg.RetireGrace, f.retire)
		}
	}
}

// countersOf returns the stats_add counters of the filter name, created on
// first use. h.mu must be held.
func (h *Host) countersOf(name string) *counters {
	c := h.counters[name]
	if c == nil {
		c = &counters{}
		h.counters[name] = c
	}
	return c
}

// Close stops loading, then closes every filter and the compilation cache.
// It waits for the calls still running to finish, at most the longest
// filter timeout and a second; the calls still running then fail. A
// compilation still running is not waited for: its result is dropped.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopSweep != nil {
		close(h.stopSweep)
		h.stopSweep = nil
	}
	h.closed = true
	h.cancel()
	wait := time.Second
	for _, f := range h.Current().filters {
		wait = max(wait, f.timeout+time.Second)
	}
	deadline := time.After(wait)
	for _, f := range h.Current().filters {
		f.drain(deadline)
	}
	h.cur.Store(emptySet())
	if h.compiling > 0 {
		return nil // the last compilation closes the cache once it ends (doneCompiling)
	}
	return h.cache.Close(context.Background())
}

// errHostClosed is what a closed host answers.
var errHostClosed = errors.New("filters: the host is closed")

// startCompiling says a load that uses the compilation cache begins; false
// when the host is closed (h.mu held).
func (h *Host) startCompiling() bool {
	if h.closed {
		return false
	}
	h.compiling++
	return true
}

// doneCompiling says such a load ended, and closes the cache when it was
// the last one of a closed host, which would otherwise write into a
// closed cache.
func (h *Host) doneCompiling() {
	h.mu.Lock()
	h.compiling--
	last := h.closed && h.compiling == 0
	h.mu.Unlock()
	if last {
		_ = h.cache.Close(context.Background())
	}
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

// Open loads the filter in dir on its own, outside any Host, synchronously
// but with the same limits (cfg.MaxModuleBytes, cfg.CompileTimeout): `vitrine
// filter test`. The caller closes it with Close.
func Open(ctx context.Context, cfg Config, dir string) (*Filter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	// Why absolute: the folder's name is the filter's, and "." or "../x"
	// has to name the folder it stands for (`vitrine filter check .`).
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	src, err := readSource(dir, cfg.MaxModuleBytes)
	if err != nil {
		return nil, loadErr(filepath.Base(dir), err)
	}
	f, _, err := loadWithin(ctx, cfg, nil, src, nil, false)
	if err != nil {
		return nil, loadErr(filepath.Base(dir), err)
	}
	return f, nil
}

// Close closes a filter opened with Open.
func (f *Filter) Close() { f.close() }

// ReloadOnHUP reloads the filters on every SIGHUP until ctx ends.
func (h *Host) ReloadOnHUP(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := h.StartReload(); err != nil {
				h.cfg.Logger.Error("filter reload", "err", err)
			}
		}
	}
}
