package ratelimit

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Policy is one configured limit: a class in a scope.
type Policy struct {
	Class Class
	Scope Scope
	Limit Limit
}

// Name is the policy's name in the RateLimit header fields: the class and
// the scope, "reads-key" or "renders-address".
func (p Policy) Name() string { return string(p.Class) + "-" + string(p.Scope) }

// Decision is the outcome of one request under one policy.
type Decision struct {
	Policy Policy
	Result Result
	// Open is set when the store failed and the request went through
	// uncounted (fail open); Result is then empty.
	Open bool
}

// Limited reports whether the request is refused.
func (d Decision) Limited() bool { return !d.Open && !d.Result.Allowed }

// Observer receives the limiter's events, for metrics; api.Metrics is one.
type Observer interface {
	// ObserveRateLimited counts a request refused under a class and scope.
	ObserveRateLimited(class, scope string)
	// ObserveRateLimitStoreError counts a check that went through
	// uncounted because the shared store failed.
	ObserveRateLimitStoreError()
	// ObserveRateLimitStoreUp says whether the shared store answers; it is
	// called when the limiter starts and at each change.
	ObserveRateLimitStoreUp(up bool)
}

// Options are what a Limiter needs beside its configuration.
type Options struct {
	// Logger receives the start and the end of each outage of the shared
	// store; default slog.Default().
	Logger *slog.Logger
	// Observer, when set, receives refusals and the shared store's health.
	Observer Observer
	// Now is the in-process store's clock; default time.Now.
	Now func() time.Time
	// Store replaces the store the configuration names (tests).
	Store Store
	// Namespace prefixes every key in Redis; default "vitrine". Instances
	// that share budgets use the same.
	Namespace string
}

// Limiter applies the configured policies. It is safe for concurrent use.
type Limiter struct {
	policies map[Class]map[Scope]Policy
	store    Store
	closer   io.Closer
	ns       string
	log      *slog.Logger
	obs      Observer
	now      func() time.Time
	shared   bool

	// down is set during an outage of the shared store; retryAt is when
	// the next check may try it again (unix nanoseconds); downSince is when
	// the outage began.
	down      atomic.Bool
	retryAt   atomic.Int64
	mu        sync.Mutex
	downSince time.Time
}

// probeEvery is how often a store that failed is tried again; the checks
// in between go through uncounted without waiting for it.
const probeEvery = time.Second

// New returns the Limiter of cfg, which must be valid (Config.Validate).
// With cfg.Redis set it counts in that Redis (connecting lazily; a Redis
// down at start is an outage like any other), otherwise in process.
func New(cfg Config, o Options) (*Limiter, error) {
	l := &Limiter{policies: map[Class]map[Scope]Policy{}, store: o.Store, ns: o.Namespace,
		log: o.Logger, obs: o.Observer, now: o.Now}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.ns == "" {
		l.ns = "vitrine"
	}
	for scope, rates := range map[Scope]map[string]string{PerKey: cfg.PerKey, PerAddress: cfg.PerAddress} {
		for class, rate := range rates {
			lim, err := ParseRate(rate)
			if err != nil {
				return nil, err
			}
			if cfg.Burst > 0 {
				lim.Burst = cfg.Burst
			}
			c := Class(class)
			if l.policies[c] == nil {
				l.policies[c] = map[Scope]Policy{}
			}
			l.policies[c][scope] = Policy{Class: c, Scope: scope, Limit: lim}
		}
	}
	switch {
	case l.store != nil:
	case cfg.Redis != "":
		r, err := NewRedis(cfg.Redis, cfg.RedisTimeout)
		if err != nil {
			return nil, err
		}
		l.store, l.closer, l.shared = r, r, true
		if l.obs != nil {
			l.obs.ObserveRateLimitStoreUp(true)
		}
	default:
		l.store = NewMemory(l.now, 0)
	}
	return l, nil
}

// Close releases the store's connections.
func (l *Limiter) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

// Limits reports whether any policy applies to class.
func (l *Limiter) Limits(class Class) bool { return len(l.policies[class]) > 0 }

// Take counts one request of class from id (a public key, or AddressKey's
// form of a client address) under the policy of class and scope. ok is
// false when no policy applies (the request is not counted). A failure of
// the store lets the request through, as an Open decision.
func (l *Limiter) Take(ctx context.Context, class Class, scope Scope, id string) (d Decision, ok bool) {
	p, ok := l.policies[class][scope]
	if !ok {
		return Decision{}, false
	}
	d.Policy = p
	if l.skip() {
		d.Open = true
		l.storeError()
		return d, true
	}
	res, err := l.store.Allow(ctx, l.ns+":"+string(scope)+":"+string(class)+":"+id, p.Limit)
	switch {
	case err != nil && ctx.Err() != nil:
		// The request ended (its client left, its deadline passed): no
		// news about the store.
		d.Open = true
	case err != nil:
		d.Open = true
		l.failed(err)
	default:
		l.answered()
		d.Result = res
		if !res.Allowed && l.obs != nil {
			l.obs.ObserveRateLimited(string(class), string(scope))
		}
	}
	return d, true
}

// skip reports whether a check must not try the store now: during an
// outage, until the next probe is due, and then for every check but the
// one that probes.
func (l *Limiter) skip() bool {
	if !l.down.Load() {
		return false
	}
	at, now := l.retryAt.Load(), l.now().UnixNano()
	return now < at || !l.retryAt.CompareAndSwap(at, now+int64(probeEvery))
}

func (l *Limiter) storeError() {
	if l.obs != nil {
		l.obs.ObserveRateLimitStoreError()
	}
}

// failed records a failed check: the first of an outage logs it.
func (l *Limiter) failed(err error) {
	l.storeError()
	l.retryAt.Store(l.now().Add(probeEvery).UnixNano())
	if l.down.Swap(true) {
		return
	}
	l.mu.Lock()
	l.downSince = l.now()
	l.mu.Unlock()
	l.log.Warn("rate limits: the shared store failed; requests go through unlimited until it answers", "err", err)
	if l.obs != nil {
		l.obs.ObserveRateLimitStoreUp(false)
	}
}

// answered records a check the store answered: the first after an outage
// logs its end.
func (l *Limiter) answered() {
	if !l.shared || !l.down.Load() || !l.down.CompareAndSwap(true, false) {
		return
	}
	l.mu.Lock()
	d := l.now().Sub(l.downSince)
	l.mu.Unlock()
	l.log.Info("rate limits: the shared store answers again", "outage", d.Round(time.Millisecond).String())
	if l.obs != nil {
		l.obs.ObserveRateLimitStoreUp(true)
	}
}

// AddressKey is the id a client address is counted under: an IPv4
// address as it is, an IPv6 address as its /64 (the block one subscriber
// is usually given, so that a client cannot walk its addresses to escape
// the limit).
func AddressKey(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
