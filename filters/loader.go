package filters

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/tetratelabs/wazero"
)

// The states of a filter folder in GET /filters.
const (
	// StateLoading: the folder's current files are being compiled and
	// started in the background. The version loaded before, if any, serves
	// meanwhile; a folder with none answers 503 (KindUnavailable).
	StateLoading = "loading"
	// StateReady: the folder's current files are the version serving.
	StateReady = "ready"
	// StateFailed: the folder's current files were refused, with a reason;
	// the version loaded before, if any, keeps serving.
	StateFailed = "failed"
	// StateUnavailable: the current files ask for a capability this
	// instance's filters.allow does not grant (NotGrantedError); the files
	// are not at fault, and another instance may run them.
	StateUnavailable = "unavailable"
)

// Pending is a filter folder whose first version is still loading: its
// manifest has been read and checked, its module is compiling. Requests
// that need it fail with Err, a KindUnavailable error (503).
type Pending struct {
	manifest *Manifest
	// key is the filter's name in its Set (CanaryKey for a canary).
	key string
	// err, when set, is why the filter cannot run here (Set.Unavailable);
	// otherwise it is still loading.
	err error
}

// Name is the filter's name.
func (p Pending) Name() string { return p.manifest.Name }

// Manifest returns the filter's manifest. It must not be changed.
func (p Pending) Manifest() *Manifest { return p.manifest }

// Err is the error of a request that needs the filter meanwhile:
// `filter <name> is still loading`.
func (p Pending) Err() error {
	if p.err != nil {
		return p.err
	}
	return stillLoading(p.manifest.Name)
}

// job is the background load of one folder's files.
type job struct {
	name string
	src  *source
	// done is closed once the job's outcome is published, or once it is
	// known to be dropped (superseded, or the host closed).
	done chan struct{}
}

// checkManifest parses and checks the manifest of src against the folder
// and the configuration: everything about a filter that can be refused
// without compiling it. A capability the configuration does not grant is
// a *NotGrantedError, returned with the manifest.
func checkManifest(cfg Config, src *source) (*Manifest, error) {
	name := src.name
	m, err := ParseManifest(src.manifest)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Name != name:
		if src.origin == SourceAPI {
			return nil, fmt.Errorf("filter.json: name %q differs from the filter's name %q", m.Name, name)
		}
		return nil, fmt.Errorf("filter.json: name %q differs from the folder name %q", m.Name, name)
	case m.Kind == KindTransformation && slices.Contains(cfg.Reserved, m.Name):
		return nil, fmt.Errorf("filter.json: name %q is a native transformation", m.Name)
	}
	for _, c := range m.Capabilities {
		if !cfg.allowed(c) {
			return m, &NotGrantedError{Capability: c}
		}
	}
	return m, nil
}

// loadWithin runs load for at most cfg.CompileTimeout; in the background
// (a Host's load, not the CLI's) on an OS thread of its own at the lowest
// scheduling priority, so that compiling does not take CPU from requests.
// It returns at the deadline even when load goes on: wazero cannot interrupt a compilation (starting the first instance
// stops at the deadline). finished is closed once load has returned; a
// filter it loads after the deadline is closed then, its result dropped.
func loadWithin(ctx context.Context, cfg Config, cache wazero.CompilationCache, src *source, ctrs *counters, background bool) (f *Filter, finished <-chan struct{}, err error) {
	// Why cancel only once this returns, never from the goroutine: a
	// goroutine that cancelled as it sent its result would let the select
	// below see both ready and, picking at random, answer "context
	// canceled" for a load that finished.
	ctx, cancel := context.WithTimeout(ctx, cfg.CompileTimeout)
	defer cancel()
	type result struct {
		f   *Filter
		err error
	}
	res := make(chan result, 1)
	fin := make(chan struct{})
	abandoned := make(chan struct{})
	go func() {
		defer close(fin)
		if background {
			// Why never unlocked: the goroutine ends locked, so its thread
			// exits with it and the lowered priority dies with the thread.
			runtime.LockOSThread()
			lowerPriority(19)
		}
		f, err := load(ctx, cfg, cache, src, ctrs)
		select {
		case res <- result{f, err}:
		case <-abandoned:
			if f != nil {
				f.close()
			}
		}
	}()
	select {
	case r := <-res:
		if r.err != nil && ctx.Err() == context.DeadlineExceeded {
			r.err = &deadlineError{limit: cfg.CompileTimeout, err: r.err}
		}
		return r.f, fin, r.err
	case <-ctx.Done():
		close(abandoned)
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fin, &deadlineError{limit: cfg.CompileTimeout}
		}
		return nil, fin, ctx.Err()
	}
}

// deadlineError is a load stopped at Config.CompileTimeout: in the middle
// of starting the first instance (err), or of compiling.
type deadlineError struct {
	limit time.Duration
	err   error
}

func (e *deadlineError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("not loaded within %s (filters.compileTimeout): %v", e.limit, e.err)
	}
	return fmt.Sprintf("filter.wasm did not compile and start within %s (filters.compileTimeout)", e.limit)
}

func (e *deadlineError) Unwrap() error { return e.err }

// enqueue queues jobs in folder-name order and starts the worker when none
// runs. Why not smallest module first: a hostile module is small, a Go
// filter several megabytes. h.mu must be held.
func (h *Host) enqueue(jobs []*job) {
	h.queue = append(h.queue, jobs...)
	if !h.working && len(h.queue) > 0 {
		h.working = true
		go h.work()
	}
}

// work loads the queued jobs one at a time until the queue is empty. Why
// one at a time, and why a job past its deadline still holds its turn
// until its compilation ends: compiling a large or hostile module takes a
// core and can take gigabytes, and a burst of them must not take every
// core or all memory.
func (h *Host) work() {
	for {
		h.mu.Lock()
		if len(h.queue) == 0 || h.closed {
			for _, j := range h.queue {
				close(j.done)
			}
			h.queue, h.working = nil, false
			h.mu.Unlock()
			return
		}
		j := h.queue[0]
		h.queue = h.queue[1:]
		current := h.jobs[j.name] == j && h.startCompiling()
		ctrs := h.countersOf(j.name)
		h.mu.Unlock()
		if !current {
			close(j.done)
			continue
		}
		start := time.Now()
		f, finished, err := loadWithin(h.ctx, h.cfg, h.cache, j.src, ctrs, true)
		h.finish(j, f, err, time.Since(start))
		<-finished
		h.doneCompiling()
	}
}

// finish publishes the outcome of j, unless j was superseded meanwhile (the
// folder changed again or left) or the host closed: then f is dropped.
func (h *Host) finish(j *job, f *Filter, err error, took time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer close(j.done)
	if h.closed || h.jobs[j.name] != j {
		if f != nil {
			f.close()
		}
		return
	}
	delete(h.jobs, j.name)
	old := h.Current()
	next := old.clone()
	delete(next.loading, j.name)
	if err != nil {
		// Why a timeout is tried again by the next reload: it may be the
		// machine's load rather than the module.
		if de := (*deadlineError)(nil); !errors.As(err, &de) {
			h.failed[j.name] = j.src.hash
		}
		err = loadErr(j.name, err)
		next.failures[j.name] = err.Error()
		if m := old.loading[j.name]; m != nil {
			next.failedManifests[j.name] = m
		}
		h.cfg.Logger.Error("filter refused", "filter", j.name, "reason", err, "keeps", next.filters[j.name] != nil,
			"took", took.Round(time.Millisecond).String())
	} else {
		next.filters[j.name] = f
		delete(next.failures, j.name)
		delete(next.failedManifests, j.name)
		delete(h.failed, j.name)
		h.cfg.Logger.Info("filter loaded", "filter", j.name, "kind", f.manifest.Kind, "version", f.manifest.Version,
			"hash", f.hash, "took", took.Round(time.Millisecond).String())
	}
	h.publish(old, next)
}
