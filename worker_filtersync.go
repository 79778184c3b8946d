package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
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
// step with the active set (README, Filters through the API): every
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
}

func newFilterSync(db *storage.DB, blobs *storage.Blobs, h *filters.Host, log *slog.Logger) *filterSync {
	s := &filterSync{db: db, blobs: blobs, h: h, log: log, revision: -1, bundles: map[string]filters.Bundle{},
		first: make(chan struct{}), instance: func() string { return "" }}
	s.canaries.Store(&map[string]int{})
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
	if fetchErr == nil {
		s.revision = set.Revision
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
			ContentHash: st.ContentHash, State: st.State})
	}
	data, err := json.Marshal(running)
	if err != nil {
		return err
	}
	return s.db.ReportFilterInstance(ctx, inst, data)
}

// percent is the canary percent of the filter name (0: none).
func (s *filterSync) percent(name string) int { return (*s.canaries.Load())[name] }

// canaryBucket places subject (user/identifier) in one of 100 buckets by
// its SHA-256: a canary at p percent serves the subjects in buckets below
// p, so one image always gets the same version, and raising p only moves
// images from the main version to the canary.
func canaryBucket(subject string) int {
	sum := sha256.Sum256([]byte(subject))
	return int(binary.BigEndian.Uint64(sum[:8]) % 100)
}
