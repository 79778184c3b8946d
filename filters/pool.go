package filters

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"
)

// errPoolClosed is returned by a pool whose filter was closed.
var errPoolClosed = errors.New("filter closed")

// instance is one instantiated guest and its export.
type instance struct {
	mod api.Module
	fn  api.Function
}

// pool is a bounded pool of instances of one filter. At most cap(slots)
// instances exist; a caller that finds them all busy waits for one or for
// its context to end. An instance is returned healthy (reused) or not
// (closed, never reused); a new one is instantiated on demand.
type pool struct {
	instantiate func(ctx context.Context) (*instance, error)
	slots       chan struct{}
	live        atomic.Int32

	mu      sync.Mutex
	idle    []*instance
	closed  bool
	retired bool // keep no idle instances
}

func newPool(size int, instantiate func(ctx context.Context) (*instance, error)) *pool {
	return &pool{instantiate: instantiate, slots: make(chan struct{}, size)}
}

// get checks an instance out, waiting for a free slot until wait ends; a
// new instance is started under start.
func (p *pool) get(wait, start context.Context) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	case <-wait.Done():
		return nil, wait.Err()
	}
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

// put returns an instance; an unhealthy one (trapped, timed out, exited)
// is closed and its slot freed for a fresh instance.
func (p *pool) put(inst *instance, healthy bool) {
	defer func() { <-p.slots }()
	if healthy && !inst.mod.IsClosed() {
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
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, inst)
}

func (p *pool) discard(inst *instance) {
	p.live.Add(-1)
	_ = inst.mod.Close(context.Background())
}

// size is how many instances exist, idle or checked out.
func (p *pool) size() int { return int(p.live.Load()) }

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
