// Package ratelimit limits how fast clients may use the service, per class
// of request (reads, renders of a new variant, writes, sign-ins to the
// admin UI) and per scope (a public key, a client address), with the
// generic cell rate algorithm (GCRA): a token bucket that keeps one
// timestamp per key. Its configuration is the `rateLimits` section of
// the configuration file (api/README.md, "Rate limits").
//
// A Limiter counts in process (Memory, bounded: a key whose bucket is
// full again holds no state and is dropped) or, when `rateLimits.redis`
// is set, in Redis, shared by every instance, through
// github.com/go-redis/redis_rate. A Redis that fails or answers slower
// than `rateLimits.redisTimeout` lets requests through unlimited (fail
// open): one log line when the outage starts, one when it ends, and the
// Observer's metrics meanwhile.
//
// SetHeaders writes a request's decisions as the RateLimit-Policy and
// RateLimit header fields of the IETF httpapi working group's draft
// (structured-field lists of quoted policy names with parameters); the
// api package decides where each class is counted.
//
// The package imports nothing of vitrine's.
package ratelimit
