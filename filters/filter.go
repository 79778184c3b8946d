package filters

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
	"go.opentelemetry.io/otel/attribute"
)

// Filter is one loaded filter: its manifest, its compiled module in its own
// runtime, and its pool of instances. Transformation and Listener are the
// faces the rest of the service sees.
type Filter struct {
	manifest *Manifest
	hash     string
	dir      string
	// origin and version are the source's (SourceDir or SourceAPI).
	origin, version string
	host            *host
	rt              wazero.Runtime
	pool            *pool
	metrics         metrics
	observer        Observer
	// trace is Config.Trace, or noTrace.
	trace   func(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error))
	timeout time.Duration
	// queueWait bounds the wait for an instance and a running slot.
	queueWait time.Duration
	runner    *runner

	// Retirement: a filter replaced or removed by a reload keeps its warm
	// instances for a grace period, then drops them; it stays usable by
	// whoever resolved it before the reload (a request straddling it), each
	// call starting a fresh instance, and its runtime is closed once the
	// filter is unreachable. Only Close (and Host.Close) end it for good,
	// once no call is running.
	mu      sync.Mutex
	active  int
	closing bool
	closed  bool
	done    chan struct{} // closed by close
}

// Name is the filter's name.
func (f *Filter) Name() string { return f.manifest.Name }

// Version is the filter's version, as its manifest states it.
func (f *Filter) Version() string { return f.manifest.Version }

// Manifest returns the filter's manifest. It must not be changed.
func (f *Filter) Manifest() *Manifest { return f.manifest }

// ContentHash identifies the filter's manifest and module: it changes
// whenever either does.
func (f *Filter) ContentHash() string { return f.hash }

// Stats returns the filter's call counters.
func (f *Filter) Stats() Stats {
	s := f.metrics.snapshot()
	s.Instances = f.pool.size()
	s.Waiting = f.pool.queued()
	return s
}

// Counters returns the filter's stats_add counters.
func (f *Filter) Counters() map[string]int64 { return f.host.counters.snapshot() }

// load reads, checks, compiles and starts the filter in dir. The returned
// filter has one instance ready, which proves that the module starts.
func load(ctx context.Context, cfg Config, cache wazero.CompilationCache, src *source, ctrs *counters) (_ *Filter, err error) {
	m, err := checkManifest(cfg, src)
	if err != nil {
		return nil, err
	}
	f := newFilter(cfg, m, src, ctrs)
	f.rt = newRuntime(ctx, cache, m.Limits.MemoryMB)
	defer func() {
		if err != nil {
			_ = f.rt.Close(context.Background())
		}
	}()
	compiled, err := f.compile(ctx, src.wasm)
	if err != nil {
		return nil, err
	}
	limits := poolLimits{instances: m.Limits.Instances, queue: min(m.Limits.Queue, cfg.MaxQueue),
		retainBytes: uint64(cfg.RetainMemoryMB) << 20, idle: cfg.IdleTimeout}
	f.pool = newPool(limits, f.instantiator(cfg, compiled))
	ictx, cancel := context.WithTimeout(ctx, f.startTimeout())
	defer cancel()
	inst, err := f.pool.instantiate(ictx)
	if err != nil {
		return nil, fmt.Errorf("filter.wasm: start: %w", err)
	}
	f.pool.add(inst)
	// Why a cleanup: a retired filter is never closed explicitly; callers
	// hold it as long as they need it, and its compiled code goes with the
	// last of them. The runtime does not refer back to f.
	runtime.AddCleanup(f, func(rt wazero.Runtime) { _ = rt.Close(context.Background()) }, f.rt)
	return f, nil
}

// newFilter is the filter of manifest m from src, with its limits and its
// host functions' state, not compiled yet; ctrs are its stats_add counters
// (fresh ones when nil).
func newFilter(cfg Config, m *Manifest, src *source, ctrs *counters) *Filter {
	if ctrs == nil {
		ctrs = &counters{}
	}
	f := &Filter{manifest: m, hash: src.hash, dir: src.dir, origin: src.origin, version: src.version, observer: cfg.Observer,
		trace: cfg.Trace, timeout: time.Duration(m.Limits.TimeoutMs) * time.Millisecond,
		queueWait: min(time.Duration(m.Limits.QueueMs)*time.Millisecond, cfg.MaxQueueWait), runner: cfg.runner,
		done: make(chan struct{}),
		host: &host{name: m.Name, settings: m.Settings, log: cfg.Logger, counters: ctrs,
			maxW: cfg.MaxWidth, maxH: cfg.MaxHeight, maxPixels: cfg.MaxPixels}}
	if f.trace == nil {
		f.trace = noTrace
	}
	return f
}

// compile compiles wasm in the filter's runtime, checks its exports,
// instantiates the host modules it may import and checks its imports
// against them.
func (f *Filter) compile(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	compiled, err := f.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("filter.wasm: %w", err)
	}
	if err := checkExports(compiled, f.manifest.Kind); err != nil {
		return nil, fmt.Errorf("filter.wasm: %w", err)
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, f.rt); err != nil {
		return nil, err
	}
	if err := f.host.instantiate(ctx, f.rt); err != nil {
		return nil, err
	}
	provided := map[string]map[string]api.FunctionDefinition{
		hostModule: f.rt.Module(hostModule).ExportedFunctionDefinitions(),
		wasiModule: f.rt.Module(wasiModule).ExportedFunctionDefinitions(),
	}
	if err := checkImports(compiled, provided); err != nil {
		return nil, fmt.Errorf("filter.wasm: %w", err)
	}
	return compiled, nil
}

// instantiator returns the function the filter's pool starts an instance
// of compiled with: on a worker thread of its own at the configured
// priority, its linear memory in a mapping of its own (mmapMemory), the
// clock's sleep when the manifest is granted it.
func (f *Filter) instantiator(cfg Config, compiled wazero.CompiledModule) func(context.Context) (*instance, error) {
	m := f.manifest
	modCfg := moduleConfig(m, startFunction(compiled))
	export := requiredExport(m.Kind)
	return func(ctx context.Context) (*instance, error) {
		inst := &instance{w: startWorker(priority{idle: cfg.Policy == PolicyIdle, nice: cfg.Nice})}
		icfg := modCfg
		if m.grants(CapClock) {
			icfg = icfg.WithNanosleep(inst.sleep)
		}
		var mod api.Module
		var err error
		// The instance keeps its memory: see mmapMemory.
		alloc := experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
			inst.memory = allocateMemory.Allocate(capacity, max)
			return inst.memory
		})
		inst.run(ctx, func() {
			mod, err = f.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, alloc), compiled, icfg)
		})
		switch {
		case err != nil:
			inst.w.stop()
			return nil, err
		case mod.IsClosed():
			inst.w.stop()
			return nil, errCommand
		}
		inst.mod, inst.fn = mod, mod.ExportedFunction(export)
		return inst, nil
	}
}

// errCommand refuses a module whose start function exited, which closes
// the instance: a command (its _start runs main) rather than a reactor.
var errCommand = errors.New("the module exited during start: it is a command, not a reactor; " +
	"build it as a reactor (Go: go build -buildmode=c-shared; C/Rust with clang: -mexec-model=reactor)")

// invoke runs one call of the filter's export with c as its state: an
// instance from the pool, the filter's timeout, and the outcome counted.
func (f *Filter) invoke(ctx context.Context, c *call) (err error) {
	if !f.enter() {
		return failed(f.Name(), errors.New("the filter was unloaded"))
	}
	defer f.leave()
	defer f.host.logDropped(ctx, c)
	start := time.Now()
	defer func() {
		switch {
		case ctx.Err() != nil: // the caller went away: not the guest's doing
		case c.serviceErr != nil && err == c.serviceErr:
			f.observe(time.Since(start), nil)
		default:
			f.observe(time.Since(start), err)
		}
	}()
	// Admission (filters/README.md): waiting for a free instance, with at
	// most the filter's queue of others, and then for a running slot, is
	// bounded by the queue wait; starting a new instance (the guest
	// runtime's _initialize) is the host's choice, not part of the call,
	// and has a deadline of its own. The call's own timeout starts once it
	// runs.
	attrs := f.spanAttrs()
	_, endWait := f.trace(ctx, "filter.wait", attrs...)
	wctx, wcancel := context.WithTimeout(ctx, f.queueWait)
	defer wcancel()
	sctx, scancel := context.WithTimeout(ctx, f.startTimeout())
	var inst *instance
	if r := reservationFor(ctx, f.pool); r != nil {
		inst, err = f.pool.checkout(sctx)
	} else {
		inst, err = f.pool.get(wctx, sctx)
	}
	scancel()
	if err != nil {
		err = f.callError(ctx, err)
		endWait(err)
		return err
	}
	if err := f.runner.acquire(wctx); err != nil {
		f.pool.put(inst, true)
		err = f.callError(ctx, errWaited)
		endWait(err)
		return err
	}
	endWait(nil)
	defer f.runner.release()
	cctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	cctx, endRun := f.trace(cctx, "filter.run", attrs...)
	var res []uint64
	inst.run(cctx, func() { res, err = inst.fn.Call(withCall(cctx, c)) })
	endRun(err)
	f.pool.put(inst, err == nil)
	if c.serviceErr != nil {
		return c.serviceErr
	}
	if err != nil {
		return f.callError(ctx, err)
	}
	if c.rejected != nil {
		return c.rejected
	}
	if code := int32(res[0]); code != 0 {
		return failed(f.Name(), fmt.Errorf("%s returned %d", requiredExport(f.manifest.Kind), code))
	}
	return nil
}

// spanAttrs are the attributes of the filter's spans (Config.Trace).
func (f *Filter) spanAttrs() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("vitrine.filter.name", f.Name()),
		attribute.String("vitrine.filter.version", f.manifest.Version), attribute.String("vitrine.filter.kind", string(f.manifest.Kind))}
}

// reservation is a slot of a filter's pool that reserve took for a call
// not made yet (Transformation.Reserve).
type reservation struct {
	pool *pool
	// done is set by the call that uses the slot, or by release.
	done atomic.Bool
}

type reservationKey struct{}

// reservationFor takes the unused reservation of pool that ctx carries,
// if any: the caller owns its slot from then on.
func reservationFor(ctx context.Context, p *pool) *reservation {
	r, _ := ctx.Value(reservationKey{}).(*reservation)
	if r == nil || r.pool != p || !r.done.CompareAndSwap(false, true) {
		return nil
	}
	return r
}

// reserve waits, as a call does, for the right to check an instance out,
// and returns ctx carrying it for the filter's next call under it, and the
// function that gives it back unused (a no-op once a call used it). It
// fails as a call's wait does (busy), and counts such a failure as a
// call.
func (f *Filter) reserve(ctx context.Context) (context.Context, func(), error) {
	if !f.enter() {
		return ctx, nil, failed(f.Name(), errors.New("the filter was unloaded"))
	}
	defer f.leave()
	start := time.Now()
	_, end := f.trace(ctx, "filter.reserve", f.spanAttrs()...)
	wctx, cancel := context.WithTimeout(ctx, f.queueWait)
	defer cancel()
	if err := f.pool.reserve(wctx); err != nil {
		err = f.callError(ctx, err)
		end(err)
		if ctx.Err() == nil {
			f.observe(time.Since(start), err)
		}
		return ctx, nil, err
	}
	end(nil)
	r := &reservation{pool: f.pool}
	return context.WithValue(ctx, reservationKey{}, r), func() {
		if r.done.CompareAndSwap(false, true) {
			f.pool.unreserve()
		}
	}, nil
}

// observe counts one finished call and tells the observer, if any.
func (f *Filter) observe(d time.Duration, err error) {
	f.metrics.record(d, err)
	if f.observer != nil {
		f.observer.ObserveFilter(f.Name(), f.manifest.Kind, d, err)
	}
}

// minStartTimeout is the least time an instance gets to start.
const minStartTimeout = 10 * time.Second

// startTimeout bounds starting one instance: the filter's timeout, and at
// least minStartTimeout.
func (f *Filter) startTimeout() time.Duration { return max(f.timeout, minStartTimeout) }

// callError classifies a failed checkout or call: the caller's own end
// (client gone, request deadline) as it is, the filter's timeout, an exit,
// or a trap.
func (f *Filter) callError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errQueueFull) || errors.Is(err, errWaited) {
		return busy(f.Name(), err)
	}
	// Why by the error and not by cctx: a trap or an out-of-memory just
	// before the deadline is the guest's failure, not a timeout.
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	if isExit && exit.ExitCode() == sys.ExitCodeDeadlineExceeded || !isExit && errors.Is(err, context.DeadlineExceeded) {
		return timedOut(f.Name(), err)
	}
	if isExit {
		return failed(f.Name(), fmt.Errorf("the guest exited with code %d", exit.ExitCode()))
	}
	return failed(f.Name(), err)
}

// enter counts a call in; it fails once the filter is closed.
func (f *Filter) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.active++
	return true
}

// leave counts a call out and closes a closing filter that became idle.
func (f *Filter) leave() {
	f.mu.Lock()
	f.active--
	last := f.closing && f.active == 0
	f.mu.Unlock()
	if last {
		f.close()
	}
}

// retire drops the warm instances of a filter a reload replaced; later
// calls by holders of the filter start a fresh instance each.
func (f *Filter) retire() { f.pool.retire() }

// drain closes the filter once its running calls have finished, or at
// deadline anyway.
func (f *Filter) drain(deadline <-chan time.Time) {
	f.mu.Lock()
	f.closing = true
	idle := f.active == 0
	f.mu.Unlock()
	if idle {
		f.close()
	}
	select {
	case <-f.done:
	case <-deadline:
		f.close()
	}
}

// close releases the pool and the runtime; later calls fail.
func (f *Filter) close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	f.mu.Unlock()
	defer close(f.done)
	f.pool.close()
	_ = f.rt.Close(context.Background())
}
