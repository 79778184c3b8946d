package filters

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

var (
	// errPoolClosed is returned by a pool whose filter was closed.
	errPoolClosed = errors.New("filter closed")
	// errQueueFull is returned at once when as many calls already wait as
	// the filter's queue holds.
	errQueueFull = errors.New("the filter's queue is full")
	// errWaited is returned when no instance came free within the queue
	// wait.
	errWaited = errors.New("no instance came free within the queue wait")
)

// instance is one instantiated guest, its export, and the worker whose
// thread runs its calls.
type instance struct {
	mod api.Module
	fn  api.Function
	w   *worker
	// memory is the guest's linear memory, held so that it stays mapped
	// as long as the instance exists (mmapMemory).
	memory experimental.LinearMemory
	// call is the context of the call (or start) running now, which host
	// functions that block (a clock sleep) end with.
	call     atomic.Pointer[context.Context]
	lastUsed time.Time // when it was last put back
}

// running returns the context of the running call; nil between calls.
func (inst *instance) running() context.Context {
	if p := inst.call.Load(); p != nil {
		return *p
	}
	return nil
}

// run runs f on the instance's thread with ctx as its running call.
func (inst *instance) run(ctx context.Context, f func()) {
	inst.w.do(func() {
		inst.call.Store(&ctx)
		defer inst.call.Store(nil)
		f()
	})
}

// close closes the module and ends its thread.
func (inst *instance) close() {
	_ = inst.mod.Close(context.Background())
	inst.w.stop()
}

// poolLimits bound a pool.
type poolLimits struct {
	// instances is the most instances that exist at once.
	instances int
	// queue is the most calls that wait for an instance at once.
	queue int
	// retainBytes: an instance whose memory grew past it is closed when
	// put back.
	retainBytes uint64
	// idle closes instances unused for longer (sweep).
	idle time.Duration
}

// pool is a bounded pool of instances of one filter. At most
// limits.instances instances exist; a caller that finds them all busy
// waits, with at most limits.queue others, for one or for its wait to end.
// An instance is returned healthy (reused) or not (closed, never reused); a
// new one is instantiated on demand.
type pool struct {
	instantiate func(ctx context.Context) (*instance, error)
	limits      poolLimits
	slots       chan struct{}
	live        atomic.Int32
	waiting     atomic.Int32

	mu      sync.Mutex
	idle    []*instance // most recently used last
	closed  bool
	retired bool // keep no idle instances
}

func newPool(limits poolLimits, instantiate func(ctx context.Context) (*instance, error)) *pool {
	return &pool{instantiate: instantiate, limits: limits, slots: make(chan struct{}, limits.instances)}
}

// get checks an instance out, waiting for a free slot until wait ends
// (errWaited, whether its deadline passed or its caller went away) unless
// the queue is full (errQueueFull); a new instance is started under start.
func (p *pool) get(wait, start context.Context) (*instance, error) {
	if err := p.reserve(wait); err != nil {
		return nil, err
	}
	return p.checkout(start)
}

// reserve takes a slot (the right to check one instance out), waiting for
// one until wait ends (errWaited) unless the queue is full (errQueueFull).
// The holder checks an instance out under it (checkout) or gives it back
// (unreserve).
func (p *pool) reserve(wait context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	if p.waiting.Add(1) > int32(p.limits.queue) {
		p.waiting.Add(-1)
		return errQueueFull
	}
	defer p.waiting.Add(-1)
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-wait.Done():
		return errWaited // or the caller went away: the caller tells
	}
}

// unreserve gives back a slot reserve took and no instance used.
func (p *pool) unreserve() { <-p.slots }

// checkout checks an instance out under a slot reserve took: an idle one,
// or a new one started under start. On an error the slot is given back.
func (p *pool) checkout(start context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.slots
			return nil, errPoolClosed
		}
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		inst := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		// Why check: an instance closed while idle (its guest exited)
		// must never run again; its slot goes to the next one.
		if !inst.mod.IsClosed() {
			return inst, nil
		}
		p.discard(inst)
	}
	inst, err := p.instantiate(start)
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.live.Add(1)
	return inst, nil
}

// put returns an instance; an unhealthy one (trapped, timed out, exited),
// or one whose memory grew past limits.retainBytes, is closed and its slot
// freed for a fresh instance.
func (p *pool) put(inst *instance, healthy bool) {
	defer func() { <-p.slots }()
	if healthy && !inst.mod.IsClosed() && uint64(inst.mod.Memory().Size()) <= p.limits.retainBytes {
		inst.lastUsed = time.Now()
		p.mu.Lock()
		if !p.closed && !p.retired {
			p.idle = append(p.idle, inst)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	p.discard(inst)
}

// add puts a fresh instance (the one load instantiates to prove the module
// starts) into the idle list.
func (p *pool) add(inst *instance) {
	p.live.Add(1)
	inst.lastUsed = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, inst)
}

func (p *pool) discard(inst *instance) {
	p.live.Add(-1)
	inst.close()
}

// size is how many instances exist, idle or checked out.
func (p *pool) size() int { return int(p.live.Load()) }

// queued is how many calls wait for an instance now.
func (p *pool) queued() int { return int(p.waiting.Load()) }

// sweep closes the instances idle for longer than limits.idle.
func (p *pool) sweep(now time.Time) {
	p.mu.Lock()
	var old []*instance
	keep := p.idle[:0]
	for _, inst := range p.idle {
		if now.Sub(inst.lastUsed) > p.limits.idle {
			old = append(old, inst)
		} else {
			keep = append(keep, inst)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.mu.Unlock()
	for _, inst := range old {
		p.discard(inst)
	}
}

// close closes the idle instances; checked-out ones are closed when put,
// and get fails from now on.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.drop()
}

// retire closes the idle instances and keeps none from now on: every get
// starts a fresh instance, closed when put.
func (p *pool) retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	p.drop()
}

// drop closes the idle instances.
func (p *pool) drop() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, inst := range idle {
		p.discard(inst)
	}
}
