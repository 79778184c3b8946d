package ratelimit

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Class is a kind of request that is counted apart from the others.
type Class string

// The classes, as the configuration names them.
const (
	// Reads are GET, HEAD and OPTIONS requests to the API.
	Reads Class = "reads"
	// Renders are transformed images that were not in the variant cache:
	// each costs a decode, the transformations and an encode.
	Renders Class = "renders"
	// Writes are POST, PUT and DELETE requests to the API.
	Writes Class = "writes"
	// SignIn are sign-ins to the admin UI.
	SignIn Class = "signin"
)

// Classes lists every class.
var Classes = []Class{Reads, Renders, Writes, SignIn}

// Scope is what a budget belongs to.
type Scope string

// The scopes.
const (
	// PerKey budgets belong to a public key, counted once the request
	// proved it holds the key.
	PerKey Scope = "key"
	// PerAddress budgets belong to a client address (an IPv6 client's
	// /64), counted for every request.
	PerAddress Scope = "address"
)

// Config is the `rateLimits` section of the configuration. Its zero value
// limits nothing.
type Config struct {
	// PerKey maps a class to the rate each public key gets in it, such as
	// "20/s" or "600/m" (a count, a slash and s, m, h, d or a duration of
	// whole seconds: "100/10s"). A class not named is unlimited.
	PerKey map[string]string `yaml:"perKey"`
	// PerAddress maps a class to the rate each client address gets in it.
	PerAddress map[string]string `yaml:"perAddress"`
	// Burst is how many requests of a class may come at once before the
	// rate applies, for every class and scope. Default 0: each rate's own
	// count (a whole period's requests may come at once).
	Burst int `yaml:"burst"`
	// Redis, a redis:// or rediss:// URL, makes every instance share the
	// budgets through that Redis. Default: each instance counts on its own.
	Redis string `yaml:"redis"`
	// RedisTimeout bounds each check in Redis; a slower or failed check
	// lets the request through (default 100ms).
	RedisTimeout time.Duration `yaml:"redisTimeout"`
}

// DefaultRedisTimeout is RedisTimeout unless set.
const DefaultRedisTimeout = 100 * time.Millisecond

// Enabled reports whether any rate is configured.
func (c Config) Enabled() bool { return len(c.PerKey)+len(c.PerAddress) > 0 }

// Validate reports every problem of the configuration, naming its key.
func (c Config) Validate() error {
	var errs []error
	for _, s := range []struct {
		name  string
		rates map[string]string
	}{{"perKey", c.PerKey}, {"perAddress", c.PerAddress}} {
		for _, class := range slices.Sorted(maps.Keys(s.rates)) {
			if !slices.Contains(Classes, Class(class)) {
				errs = append(errs, fmt.Errorf("rateLimits.%s: unknown class %q (want reads, renders, writes or signin)", s.name, class))
				continue
			}
			if _, err := ParseRate(s.rates[class]); err != nil {
				errs = append(errs, fmt.Errorf("rateLimits.%s.%s: %w", s.name, class, err))
			}
		}
	}
	if c.Burst < 0 {
		errs = append(errs, fmt.Errorf("rateLimits.burst: must not be negative, got %d", c.Burst))
	}
	if c.RedisTimeout < 0 {
		errs = append(errs, fmt.Errorf("rateLimits.redisTimeout: must not be negative, got %s", c.RedisTimeout))
	}
	if c.Redis != "" {
		u, err := url.Parse(c.Redis)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("rateLimits.redis: %w", err))
		case u.Scheme != "redis" && u.Scheme != "rediss":
			errs = append(errs, fmt.Errorf("rateLimits.redis: want a redis:// or rediss:// URL, got scheme %q", u.Scheme))
		case !c.Enabled():
			errs = append(errs, errors.New("rateLimits.redis is set but no rate is: set rateLimits.perKey or rateLimits.perAddress"))
		}
	}
	return errors.Join(errs...)
}

// Limit is a rate with its burst: Count requests per Period in the long
// run, Burst of them at once.
type Limit struct {
	Count  int
	Period time.Duration
	Burst  int
}

// interval is the time one request takes back from the budget (GCRA's
// emission interval).
func (l Limit) interval() time.Duration { return l.Period / time.Duration(l.Count) }

// Rate writes the limit as the configuration does: "20/s".
func (l Limit) Rate() string {
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h", 24 * time.Hour: "d"}[l.Period]
	if unit == "" {
		unit = strconv.FormatInt(int64(l.Period/time.Second), 10) + "s"
	}
	return strconv.Itoa(l.Count) + "/" + unit
}

// String is the rate with its burst: "20/s (burst 20)".
func (l Limit) String() string { return fmt.Sprintf("%s (burst %d)", l.Rate(), l.Burst) }

// maxCount bounds a rate's count, so that its interval stays at least a
// microsecond and counts fit everywhere they go.
const maxCount = 1_000_000

// ParseRate reads a rate: a positive count, a slash and a period, one of
// s, m, h, d or a Go duration of whole seconds ("10s", "15m"). Its Burst is
// the count.
func ParseRate(s string) (Limit, error) {
	count, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if !ok || err != nil || n < 1 || n > maxCount {
		return Limit{}, fmt.Errorf("invalid rate %q: want a count from 1 to %d, a slash and a period, such as \"20/s\" or \"600/m\"", s, maxCount)
	}
	per = strings.TrimSpace(per)
	var d time.Duration
	switch per {
	case "s":
		d = time.Second
	case "m":
		d = time.Minute
	case "h":
		d = time.Hour
	case "d":
		d = 24 * time.Hour
	default:
		d, err = time.ParseDuration(per)
		if err != nil || d < time.Second || d%time.Second != 0 || d > 24*time.Hour {
			return Limit{}, fmt.Errorf("invalid rate %q: the period is s, m, h, d or whole seconds up to a day (\"10s\", \"15m\")", s)
		}
	}
	return Limit{Count: n, Period: d, Burst: n}, nil
}
