package storage

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Per-day usage counters (migration step 10): one row per day, metric and
// label (such as "key.requests" and a public key, or "requests" and a
// status code), whose value adds up. Counting happens in memory; each
// Usage.Flush writes the sums with one upsert per row (a worker calls it
// every few seconds), so a request never waits on an extra write.

// Metric names the server counts.
const (
	// MetricKeyRequests counts requests per public key (label).
	MetricKeyRequests = "key.requests"
	// MetricRequests counts responses per status code (label).
	MetricRequests = "requests"
	// MetricUploads and MetricUploadBytes count stored uploads per user.
	MetricUploads     = "uploads"
	MetricUploadBytes = "upload.bytes"
	// MetricVariantHits and MetricVariantMisses count variant cache
	// lookups; MetricRenderMicros and MetricRenders sum render time.
	MetricVariantHits   = "variant.hits"
	MetricVariantMisses = "variant.misses"
	MetricRenderMicros  = "render.us"
	MetricRenders       = "renders"
	// MetricRateLimited counts requests refused by a rate limit, per
	// public key (label) for the limits per key, and under the label
	// "(address)" for the limits per client address.
	MetricRateLimited = "ratelimit.hits"
)

// UsageCount is one counter row: Day is "YYYY-MM-DD" (UTC); Last is the
// time of the latest flush that added to it.
type UsageCount struct {
	Day, Metric, Label string
	Value              int64
	Last               time.Time
}

type usageRow struct {
	bun.BaseModel `bun:"table:usage_counters"`

	Day    string `bun:"day,pk"`
	Metric string `bun:"metric,pk"`
	Label  string `bun:"label,pk"`
	Value  int64  `bun:"value"`
	Last   int64  `bun:"last"`
}

// AddUsage adds each count's Value to its row, creating rows as needed,
// in one transaction.
func (db *DB) AddUsage(ctx context.Context, counts []UsageCount) error {
	if len(counts) == 0 {
		return nil
	}
	// Why sorted: concurrent flushes of several instances lock the rows in
	// one order and so cannot deadlock.
	sort.Slice(counts, func(i, j int) bool {
		a, b := counts[i], counts[j]
		if a.Day != b.Day {
			return a.Day < b.Day
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		return a.Label < b.Label
	})
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, c := range counts {
			row := &usageRow{Day: c.Day, Metric: c.Metric, Label: clip(c.Label, maxName), Value: c.Value, Last: c.Last.UnixMicro()}
			q := tx.NewInsert().Model(row)
			if db.kind == mysqlKind {
				q = q.On("DUPLICATE KEY UPDATE").Set("value = value + VALUES(value)").
					Set("last = GREATEST(last, VALUES(last))")
			} else {
				greatest := "GREATEST"
				if db.kind == sqliteKind {
					greatest = "MAX"
				}
				q = q.On("CONFLICT (day, metric, label) DO UPDATE").
					Set("value = ?TableAlias.value + EXCLUDED.value").
					Set("last = " + greatest + "(?TableAlias.last, EXCLUDED.last)")
			}
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storage: add usage: %w", err)
	}
	return nil
}

// UsageSince returns the rows of metric from day since (inclusive,
// "YYYY-MM-DD") on, ordered by day and label.
func (db *DB) UsageSince(ctx context.Context, metric, since string) ([]UsageCount, error) {
	var rows []usageRow
	err := db.bun.NewSelect().Model(&rows).Where("metric = ? AND day >= ?", metric, since).
		Order("day", "label").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: usage of %s: %w", metric, err)
	}
	out := make([]UsageCount, len(rows))
	for i, r := range rows {
		out[i] = UsageCount{Day: r.Day, Metric: r.Metric, Label: r.Label, Value: r.Value, Last: time.UnixMicro(r.Last).UTC()}
	}
	return out, nil
}

// UsageConfig is the `audit` section: how long the audit log and the
// usage counters are kept.
type UsageConfig struct {
	// Retention is how long audit entries are kept (default 2160h, 90
	// days); older ones are deleted once an hour (Usage.PurgeAudit).
	Retention time.Duration `yaml:"retention"`
	// Flush is how often counted usage is written (default 5s). The loop
	// that calls Usage.Flush reads it (package main's workers) and owns
	// its default.
	Flush time.Duration `yaml:"flush"`
}

// Validate reports a negative duration.
func (c UsageConfig) Validate() error {
	if c.Retention < 0 || c.Flush < 0 {
		return fmt.Errorf("storage: audit: durations must not be negative: %w", ErrInvalid)
	}
	return nil
}

// Usage counts per-day usage in memory and flushes it to the database; it
// also purges the audit log past its retention. Safe for concurrent use.
type Usage struct {
	db  *DB
	cfg UsageConfig

	mu      sync.Mutex
	pending map[usageKey]int64
}

type usageKey struct{ day, metric, label string }

// NewUsage returns a Usage on db. A zero or negative Retention (which
// Validate reports) takes its default, so a wrong setting cannot purge the
// whole audit log.
func NewUsage(db *DB, cfg UsageConfig) *Usage {
	if cfg.Retention <= 0 {
		cfg.Retention = 90 * 24 * time.Hour
	}
	return &Usage{db: db, cfg: cfg, pending: map[usageKey]int64{}}
}

// Add counts n for metric and label today. A nil Usage counts nothing.
func (u *Usage) Add(metric, label string, n int64) {
	if u == nil {
		return
	}
	k := usageKey{time.Now().UTC().Format(time.DateOnly), metric, label}
	u.mu.Lock()
	u.pending[k] += n
	u.mu.Unlock()
}

// Flush writes what was counted since the last flush. On failure the
// counts are kept for the next one.
func (u *Usage) Flush(ctx context.Context) error {
	u.mu.Lock()
	taken := u.pending
	u.pending = map[usageKey]int64{}
	u.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	now := time.Now()
	counts := make([]UsageCount, 0, len(taken))
	for k, v := range taken {
		counts = append(counts, UsageCount{Day: k.day, Metric: k.metric, Label: k.label, Value: v, Last: now})
	}
	if err := u.db.AddUsage(ctx, counts); err != nil {
		u.mu.Lock()
		for k, v := range taken {
			u.pending[k] += v
		}
		u.mu.Unlock()
		return err
	}
	return nil
}

// PurgeAudit deletes the audit entries older than the retention.
func (u *Usage) PurgeAudit(ctx context.Context) error {
	_, err := u.db.PurgeAudit(ctx, time.Now().Add(-u.cfg.Retention))
	return err
}

// UsageLast returns, per label of metric, the time of the latest flush
// that counted it (for key.requests: when each key was last used).
func (db *DB) UsageLast(ctx context.Context, metric string) (map[string]time.Time, error) {
	var rows []struct {
		Label string `bun:"label"`
		Last  int64  `bun:"last"`
	}
	err := db.bun.NewSelect().Model((*usageRow)(nil)).Column("label").ColumnExpr("MAX(last) AS last").
		Where("metric = ?", metric).Group("label").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("storage: last use of %s: %w", metric, err)
	}
	out := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		out[r.Label] = time.UnixMicro(r.Last).UTC()
	}
	return out, nil
}
