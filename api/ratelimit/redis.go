package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Redis is a Store shared by every instance that uses the same Redis:
// GCRA in a script that runs in Redis (github.com/go-redis/redis_rate, on
// Redis's clock, so the instances' clocks need not agree). Each check is
// bounded by the timeout, without retries: a Redis that does not answer in
// time is an error, and the Limiter lets the request through.
type Redis struct {
	client  *redis.Client
	limiter *redis_rate.Limiter
	timeout time.Duration
}

// NewRedis connects (lazily) to the Redis at rawURL, a redis:// or
// rediss:// URL; timeout bounds each check (DefaultRedisTimeout when 0).
// The URL's own dial_timeout, read_timeout and write_timeout win over it.
func NewRedis(rawURL string, timeout time.Duration) (*Redis, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if timeout <= 0 {
		timeout = DefaultRedisTimeout
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = timeout
	}
	if opt.ReadTimeout == 0 {
		opt.ReadTimeout = timeout
	}
	if opt.WriteTimeout == 0 {
		opt.WriteTimeout = timeout
	}
	if opt.PoolTimeout == 0 {
		opt.PoolTimeout = timeout
	}
	// Why no retries: a retried check makes every request wait longer for
	// a Redis that is failing, and a failed check costs nothing but one
	// request counted less.
	opt.MaxRetries, opt.DialerRetries = -1, 1
	opt.ContextTimeoutEnabled = true
	quietRedis.Do(func() { redis.SetLogger(discardLogger{}) })
	c := redis.NewClient(opt)
	return &Redis{client: c, limiter: redis_rate.NewLimiter(c), timeout: timeout}, nil
}

// quietRedis silences go-redis's own logger, once for the process (it has
// only the one): it prints a line for every failed dial, that is, once a
// second through an outage, and the Limiter already logs when an outage
// begins and when it ends.
var quietRedis sync.Once

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// Allow counts one request of key against l in Redis.
func (r *Redis) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := r.limiter.Allow(ctx, key, redis_rate.Limit{Rate: l.Count, Period: l.Period, Burst: l.Burst})
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	out := Result{Allowed: res.Allowed > 0, ResetAfter: max(res.ResetAfter, 0)}
	if !out.Allowed {
		out.RetryAfter = max(res.RetryAfter, 0)
		return out, nil
	}
	out.Remaining = remaining(l, out.ResetAfter)
	return out, nil
}

// remaining is how many more requests l lets in at once when its budget
// is whole again after resetAfter: what the in-process limiter counts.
// Why not redis_rate's own count: its script divides floating-point
// seconds and truncates, so 19 comes back as 18.999 and then 18. A
// microsecond of slack absorbs that rounding.
func remaining(l Limit, resetAfter time.Duration) int {
	i := l.interval()
	n := int((time.Duration(l.Burst)*i - resetAfter + time.Microsecond) / i)
	return min(max(n, 0), max(l.Burst-1, 0))
}

// Close closes the connections to Redis.
func (r *Redis) Close() error { return r.client.Close() }

var _ Store = (*Redis)(nil)
