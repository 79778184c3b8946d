package ratelimit

import (
	"cmp"
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what a check decided.
type Result struct {
	// Allowed says whether the request may go ahead (and was counted).
	Allowed bool
	// Remaining is how many more requests may come at once now.
	Remaining int
	// RetryAfter is, for a refused request, how long until one is allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the whole burst is available again.
	ResetAfter time.Duration
}

// Store counts requests against limits, one budget per key.
type Store interface {
	// Allow counts one request of key against l, unless l refuses it.
	Allow(ctx context.Context, key string, l Limit) (Result, error)
}

// Memory is an in-process Store: GCRA over one theoretical arrival time
// (TAT) per key, in shards that each hold a lock. A key whose TAT has
// passed has its whole burst again, which is what no entry says too, so
// such keys are dropped: all of them every sweepEvery, by the request
// that finds the sweep due, and a shard's whenever it is full. A shard still full after that drops the quarter of its
// keys nearest to a whole burst, so a flood of new keys (addresses) costs
// bounded memory and the keys being throttled hardest are kept longest.
type Memory struct {
	now func() time.Time
	// base is the clock's reading at the start: times are kept as
	// nanoseconds since then, read on the monotonic clock where now has
	// one, so a step of the wall clock moves no budget.
	base   time.Time
	seed   maphash.Seed
	max    int          // keys per shard
	swept  atomic.Int64 // when the last sweep began, nanoseconds since base
	shards [shards]shard
}

type shard struct {
	mu  sync.Mutex
	tat map[string]int64 // nanoseconds since base
}

const (
	shards = 16
	// DefaultMaxKeys is how many keys a Memory holds at most by default:
	// about 10 MB.
	DefaultMaxKeys = 100_000
	sweepEvery     = int64(time.Minute)
)

// NewMemory returns an in-process Store on the clock now (time.Now when
// nil) holding at most maxKeys keys (DefaultMaxKeys when 0).
func NewMemory(now func() time.Time, maxKeys int) *Memory {
	if now == nil {
		now = time.Now
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	m := &Memory{now: now, base: now(), seed: maphash.MakeSeed(), max: max(maxKeys/shards, 1)}
	for i := range m.shards {
		m.shards[i].tat = map[string]int64{}
	}
	return m
}

// Allow counts one request of key against l (GCRA): it is allowed when,
// after adding its interval to the key's TAT, the TAT is at most
// l.Burst intervals ahead of now.
func (m *Memory) Allow(_ context.Context, key string, l Limit) (Result, error) {
	now := int64(m.now().Sub(m.base))
	if last := m.swept.Load(); now-last >= sweepEvery && m.swept.CompareAndSwap(last, now) {
		m.sweep(now)
	}
	sh := &m.shards[maphash.String(m.seed, key)%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	interval := int64(l.interval())
	stored, known := sh.tat[key]
	tat := max(stored, now)
	newTAT := tat + interval
	diff := now - (newTAT - interval*int64(l.Burst))
	if diff < 0 {
		return Result{RetryAfter: time.Duration(-diff), ResetAfter: time.Duration(tat - now)}, nil
	}
	if !known {
		m.makeRoom(sh, now)
	}
	sh.tat[key] = newTAT
	return Result{Allowed: true, Remaining: int(diff / interval), ResetAfter: time.Duration(newTAT - now)}, nil
}

// sweep drops, in every shard, the keys whose burst is whole again.
func (m *Memory) sweep(now int64) {
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		sh.sweep(now)
		sh.mu.Unlock()
	}
}

func (sh *shard) sweep(now int64) {
	for k, t := range sh.tat {
		if t <= now {
			delete(sh.tat, k)
		}
	}
}

// makeRoom makes room for a new key in a full shard: it drops the keys
// whose burst is whole again and then, while the shard is still full, the
// quarter of its keys nearest to a whole burst.
func (m *Memory) makeRoom(sh *shard, now int64) {
	if len(sh.tat) < m.max {
		return
	}
	sh.sweep(now)
	if len(sh.tat) < m.max {
		return
	}
	type entry struct {
		key string
		tat int64
	}
	all := make([]entry, 0, len(sh.tat))
	for k, t := range sh.tat {
		all = append(all, entry{k, t})
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.tat, b.tat) })
	for _, e := range all[:len(all)-m.max*3/4] {
		delete(sh.tat, e.key)
	}
}

// Len is how many keys the store holds.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.tat)
		sh.mu.Unlock()
	}
	return n
}

var _ Store = (*Memory)(nil)
