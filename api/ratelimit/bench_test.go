package ratelimit_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/vitrine/vitrine/api/ratelimit"
)

// These benchmarks put a number on the cost of one rate-limit check (one
// Take: one policy, one key), the figure e2e/README.md's "Rate limits: cost"
// quotes. "memory" counts in process: "one-key" is every worker on the
// same key (the worst case for the shard locks), "100k-keys" walks 100 000
// keys (addresses), which the store holds at its default bound. "redis" is
// one round trip to the Redis of VITRINE_TEST_REDIS (skipped without it),
// "sequential" one check at a time, "parallel" GOMAXPROCS at once. Run
// with:
//
//	VITRINE_TEST_REDIS=redis://127.0.0.1:6379/0 go test ./api/ratelimit -run '^$' -bench . -benchtime 2s
//
// Nothing here asserts a time.

func benchLimiter(b *testing.B, cfg ratelimit.Config) *ratelimit.Limiter {
	b.Helper()
	// A rate no benchmark exhausts, so every check is a counted one.
	cfg.PerKey = map[string]string{"reads": "1000000/s"}
	l, err := ratelimit.New(cfg, ratelimit.Options{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

func BenchmarkTake(b *testing.B) {
	b.Run("memory/one-key", func(b *testing.B) {
		l := benchLimiter(b, ratelimit.Config{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Take(b.Context(), ratelimit.Reads, ratelimit.PerKey, "alice")
			}
		})
	})
	b.Run("memory/100k-keys", func(b *testing.B) {
		l := benchLimiter(b, ratelimit.Config{})
		keys := make([]string, 100_000)
		for i := range keys {
			keys[i] = "198.51." + strconv.Itoa(i/256%256) + "." + strconv.Itoa(i%256) + "-" + strconv.Itoa(i)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				l.Take(b.Context(), ratelimit.Reads, ratelimit.PerKey, keys[i%len(keys)])
				i += 7
			}
		})
	})
	b.Run("redis/sequential", func(b *testing.B) {
		l := benchLimiter(b, ratelimit.Config{Redis: redisURLBench(b)})
		b.ReportAllocs()
		for b.Loop() {
			if d, _ := l.Take(b.Context(), ratelimit.Reads, ratelimit.PerKey, "alice"); d.Open {
				b.Fatal("Redis failed")
			}
		}
	})
	b.Run("redis/parallel", func(b *testing.B) {
		l := benchLimiter(b, ratelimit.Config{Redis: redisURLBench(b)})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Take(b.Context(), ratelimit.Reads, ratelimit.PerKey, "alice")
			}
		})
	})
}

// redisURLBench is redisURL for benchmarks.
func redisURLBench(b *testing.B) string {
	b.Helper()
	u := os.Getenv(envRedis)
	if u == "" {
		b.Skip("set " + envRedis + "=redis://127.0.0.1:6379/0 to run")
	}
	return u
}
