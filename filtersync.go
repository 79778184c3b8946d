package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
)

// filterSync keeps this instance's filters deployed through the API in
// step with the active set (filters/README.md, Filters through the API): every
// filters.syncInterval, and at once after a change made through this
// instance, it reads the set's revision; when it changed it fetches the
// bundles it lacks from the blob store and hands them to the host, which
// loads them in the background as a reload does and swaps each in once it
// is ready. Every pass also reports what the instance serves, with a
// heartbeat, for GET /filters.
type filterSync struct {
	db       *storage.DB
	blobs    *storage.Blobs
	h        *filters.Host
	log      *slog.Logger
	instance func() string

	// revision is the set's revision last deployed, -1 before the first.
	revision int64
	// bundles are the bundles of the last deployment, by version.
	bundles map[string]filters.Bundle
	// canaries maps a filter's name to its canary's percent, read by
	// every request (guestSource).
	canaries atomic.Pointer[map[string]int]
	// wake is the sync's worker, woken after a change made here.
	wake *worker
	// first is closed once the first deployment has loaded or failed.
	first     chan struct{}
	firstOnce sync.Once
	// handed is the revision last handed to the host (loaded or loading).
	handed atomic.Int64

	// read is the last read of the active set that notLoaded made, and
	// when it started; readMu serialises those reads.
	readMu  sync.Mutex
	read    storage.FilterSet
	readErr error
	readAt  time.Time
	// kinds caches each version's manifest kind (a version never changes).
	kinds sync.Map
}

func newFilterSync(db *storage.DB, blobs *storage.Blobs, h *filters.Host, log *slog.Logger) *filterSync {
	s := &filterSync{db: db, blobs: blobs, h: h, log: log, revision: -1, bundles: map[string]filters.Bundle{},
		first: make(chan struct{}), instance: func() string { return "" }}
	s.canaries.Store(&map[string]int{})
	s.handed.Store(-1)
	return s
}

// defaultSyncInterval is filters.syncInterval's default.
const defaultSyncInterval = 5 * time.Second

// worker is the sync's loop.
func (s *filterSync) worker(interval time.Duration) *worker {
	w := newWorker("filter sync", interval, defaultSyncInterval, s.pass, s.log)
	w.stop = s.done
	s.wake = w
	return w
}

// done releases readiness when the worker ends before a first deployment.
func (s *filterSync) done() { s.firstOnce.Do(func() { close(s.first) }) }

// pass deploys the active set when it changed, then reports.
func (s *filterSync) pass(ctx context.Context) (int, error) {
	n, err := s.deploy(ctx)
	if err != nil {
		return n, err
	}
	return n, s.report(ctx)
}

// deploy loads the active set when its revision changed, and waits for
// the loads (at most filters.compileTimeout each); a bundle that cannot be
// fetched leaves the revision to be tried again at the next pass.
func (s *filterSync) deploy(ctx context.Context) (int, error) {
	set, err := s.db.FilterSet(ctx)
	if err != nil {
		return 0, err
	}
	if set.Revision == s.revision {
		return 0, nil
	}
	want := map[string]filters.Bundle{}
	bundles := map[string]filters.Bundle{}
	canaries := map[string]int{}
	var errs []error
	add := func(key, name, version string) {
		b, err := s.bundle(ctx, name, version)
		if err != nil {
			errs = append(errs, err)
			return
		}
		want[key], bundles[version] = b, b
	}
	for name, d := range set.Filters {
		if !d.Enabled {
			continue
		}
		add(name, name, d.Version)
		if d.Canary != "" && d.Percent > 0 {
			add(filters.CanaryKey(name), name, d.Canary)
			canaries[name] = d.Percent
		}
	}
	fetchErr := errors.Join(errs...)
	if fetchErr != nil && s.revision != -1 {
		return 0, fetchErr // keep serving the set loaded before; the next pass tries again
	}
	// Why the first deployment goes ahead without what it could not
	// fetch: a new instance would otherwise never be ready; it serves the
	// rest and tries again at the next pass.
	s.log.Info("filter sync: deploying", "revision", set.Revision, "filters", len(want))
	w, err := s.h.Deploy(want)
	if err != nil {
		return 0, err
	}
	// Why the percents before the loads finish: a canary still loading is
	// not in the set yet, and guestSource serves the main version.
	s.canaries.Store(&canaries)
	s.bundles = bundles
	s.handed.Store(set.Revision)
	if fetchErr == nil {
		s.revision = set.Revision
	}
	// Why a report before the loads finish: the instance that took the
	// change waits for every instance's (api, rollout), and "loading"
	// with the version says this one has it.
	if err := s.report(ctx); err != nil {
		s.log.Warn("filter sync: report", "err", err)
	}
	w.Wait(ctx)
	s.firstOnce.Do(func() { close(s.first) })
	return len(want), fetchErr
}

// bundle returns the bundle of version, from the last deployment or the
// blob store.
func (s *filterSync) bundle(ctx context.Context, name, version string) (filters.Bundle, error) {
	if b, ok := s.bundles[version]; ok && b.Name == name {
		return b, nil
	}
	data, err := s.blobs.Get(ctx, storage.FilterBlobKey(version))
	if err != nil {
		return filters.Bundle{}, fmt.Errorf("filter %s version %s: %w", name, version, err)
	}
	// A stored bundle is the tar PUT wrote, after its checks: bounded by
	// what a PUT takes.
	m, w, err := api.ReadFilterBundle(bytes.NewReader(data), api.DefaultBundleLimits(api.MaxFilterBundleBytes))
	if err != nil {
		return filters.Bundle{}, fmt.Errorf("filter %s version %s: %w", name, version, err)
	}
	return filters.Bundle{Name: name, Version: version, Manifest: m, Wasm: w}, nil
}

// report records what this instance serves now.
func (s *filterSync) report(ctx context.Context) error {
	inst := s.instance()
	if inst == "" {
		return nil
	}
	var running []api.FilterRunning
	for _, st := range s.h.Current().Status() {
		running = append(running, api.FilterRunning{Name: st.Name, Source: st.Source, Version: st.Version,
			Target: st.Target, ContentHash: st.ContentHash, State: st.State, Error: st.Error})
	}
	data, err := json.Marshal(running)
	if err != nil {
		return err
	}
	return s.db.ReportFilterInstance(ctx, inst, data)
}

// lookupTimeout bounds notLoaded's reads of the database.
const lookupTimeout = 2 * time.Second

// notLoaded answers for a transformation name that the host's set does not
// hold: when the active set has it enabled, this instance has not loaded
// it yet (its sync has not passed since the change), and the answer is a
// KindUnavailable error (503, Retry-After), never "not registered"; the
// sync is woken when the change is news to it. nil when no filter of that
// name is deployed, enabled and a transformation.
func (s *filterSync) notLoaded(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	set, err := s.freshSet(ctx)
	if err != nil {
		return &filters.Error{Kind: filters.KindUnavailable, Filter: name, Err: err,
			Msg: "Cannot tell whether filter " + name + " is deployed: the database did not answer; try again"}
	}
	d, ok := set.Filters[name]
	if !ok || !d.Enabled || s.kind(ctx, name, d.Version) != filters.KindTransformation {
		return nil
	}
	if set.Revision > s.handed.Load() && s.wake != nil {
		s.wake.Wake()
	}
	return &filters.Error{Kind: filters.KindUnavailable, Filter: name,
		Msg: "Filter " + name + " version " + d.Version[:12] + " is being deployed and has not loaded on this instance yet; try again"}
}

// freshSet reads the active set, as it is at least since the call: calls
// made while a read is under way share the next read, so a burst of
// requests for unknown names makes one query at a time.
func (s *filterSync) freshSet(ctx context.Context) (storage.FilterSet, error) {
	arrived := time.Now()
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if s.readAt.After(arrived) {
		return s.read, s.readErr
	}
	start := time.Now()
	s.read, s.readErr = s.db.FilterSet(ctx)
	s.readAt = start
	return s.read, s.readErr
}

// kind is the manifest kind of a recorded version ("" when unknown).
func (s *filterSync) kind(ctx context.Context, name, version string) string {
	if k, ok := s.kinds.Load(version); ok {
		return k.(string)
	}
	v, err := s.db.FilterVersion(ctx, name, version)
	if err != nil {
		return ""
	}
	var m struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(v.Manifest, &m) // a recorded manifest passed the checks
	s.kinds.Store(version, m.Kind)
	return m.Kind
}
