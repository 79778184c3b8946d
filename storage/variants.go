package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// CacheConfig bounds the shared variant cache. The zero value is an
// unbounded cache whose last-use times are flushed every 5 seconds.
type CacheConfig struct {
	// MaxBytes caps the total size of cached variants across every instance
	// sharing the database; the least recently used go first. 0 means no
	// cap.
	MaxBytes int64 `yaml:"maxBytes"`
	// MaxAge evicts variants created longer ago than this (they are
	// rendered again on the next request); 0 keeps them until evicted by
	// size. Expired variants are removed at each flush, so one may be served
	// up to FlushInterval late.
	MaxAge time.Duration `yaml:"maxAge"`
	// FlushInterval is how often last-use times gathered in memory are
	// written to the database, and expired and over-cap variants evicted
	// (Flush). Default 5s. The loop that calls Flush reads it (package
	// main's workers) and owns its default.
	FlushInterval time.Duration `yaml:"flushInterval"`
	// Now is the clock; default time.Now. Tests set it.
	Now func() time.Time `yaml:"-"`
}

// Validate reports a negative bound.
func (c CacheConfig) Validate() error {
	if c.MaxBytes < 0 || c.MaxAge < 0 || c.FlushInterval < 0 {
		return fmt.Errorf("storage: cache: maxBytes, maxAge and flushInterval must not be negative: %w", ErrInvalid)
	}
	return nil
}

// lowWater is the fraction of MaxBytes an eviction brings the total down
// to. Why below the cap: the total is summed in SQL only when this instance
// thinks it crossed the cap, so evicting a margin keeps that rare.
const lowWater = 0.9

// maxPending bounds the last-use times kept in memory between flushes;
// later hits are not recorded until the next flush (they stay hits).
const maxPending = 100_000

// variantRow is the variants table (migration step 3): one row per cached
// variant blob, for the size cap and least-recently-used eviction.
type variantRow struct {
	bun.BaseModel `bun:"table:variants"`

	User       string `bun:"user_name,pk"`
	Identifier string `bun:"identifier,pk"`
	Hash       string `bun:"hash,pk"`
	Size       int64  `bun:"size"`
	Created    int64  `bun:"created"`   // unix microseconds
	LastUsed   int64  `bun:"last_used"` // unix microseconds
	BlobToken  string `bun:"blob_token"`
	Chain      string `bun:"chain"`  // migration step 16
	Format     string `bun:"format"` // migration step 16
}

// key is the variant's blob key.
func (r *variantRow) key() string { return VariantKey(r.User, r.Identifier, r.BlobToken, r.Hash) }

// variantID names one cached variant.
type variantID struct{ user, id, hash string }

// VariantCache keeps transformed variants in the blob store and their sizes
// and last use in the database, so that every instance sharing both sees
// one cache with one size cap. A hit is one blob read; its last use is
// remembered in memory and written in batches (Flush). It is safe for
// concurrent use.
type VariantCache struct {
	db    *DB
	blobs *Blobs
	cfg   CacheConfig
	now   func() time.Time
	coll  *Collector // deletes evicted and purged blobs through blob_queue

	mu      sync.Mutex
	pending map[variantID]int64 // last use not yet flushed, unix microseconds

	evictMu   sync.Mutex   // one eviction at a time in this instance
	estimate  atomic.Int64 // total bytes: the last SQL sum plus this instance's writes since
	evictions atomic.Int64
	evicted   atomic.Int64 // bytes
}

// NewVariantCache returns the cache over db and blobs. Call Flush every
// FlushInterval to write last uses and evict, and Close at the end.
func NewVariantCache(db *DB, blobs *Blobs, cfg CacheConfig) (*VariantCache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	coll, err := NewCollector(db, blobs, CollectorConfig{})
	if err != nil {
		return nil, err
	}
	return &VariantCache{db: db, blobs: blobs, cfg: cfg, now: cfg.Now, coll: coll, pending: map[variantID]int64{}}, nil
}

// Get returns the cached variant of img's bytes; ErrNotExist on a miss.
func (c *VariantCache) Get(ctx context.Context, img Image, hash string) ([]byte, error) {
	data, err := c.blobs.Get(ctx, VariantKey(img.User, img.Identifier, img.BlobToken, hash))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.pending) < maxPending {
		c.pending[variantID{img.User, img.Identifier, hash}] = c.now().UnixMicro()
	}
	c.mu.Unlock()
	return data, nil
}

// Put stores a variant of img and accounts for it: the blob is reserved
// (blob_queue), written, then recorded in a transaction that holds img's
// row, so that a variant of an image deleted meanwhile is never recorded
// and its blob is collected. stored is false in that case. When this
// instance's estimate of the total passes MaxBytes it evicts before
// returning, so the cap holds after every Put of one instance (and after
// every flush across instances). A variant that would take its image past
// the user's variants-per-image quota is not stored: stored is false and
// the error a *QuotaError (ErrQuotaExceeded); its blob, if written, is
// released.
func (c *VariantCache) Put(ctx context.Context, img Image, name VariantName, data []byte) (stored bool, err error) {
	hash := name.Hash
	if err := checkLen("user", img.User, maxName, true); err != nil {
		return false, err
	}
	if err := checkLen("image identifier", img.Identifier, maxName, true); err != nil {
		return false, err
	}
	if err := checkLen("variant hash", hash, maxChecksum, true); err != nil {
		return false, err
	}
	// Before the blob is written, so that a variant past the quota costs
	// no write; again below where it counts.
	if err := c.db.checkVariantQuota(ctx, c.db.bun, img, hash); err != nil {
		return false, fmt.Errorf("storage: record variant %s: %w", hash, err)
	}
	key := VariantKey(img.User, img.Identifier, img.BlobToken, hash)
	res, err := c.db.Reserve(ctx, key)
	if err != nil {
		return false, err
	}
	release := func() {
		// Best effort: an unreleased reservation still expires.
		_ = c.db.Release(context.WithoutCancel(ctx), res)
	}
	if err := c.blobs.Put(ctx, key, data); err != nil {
		release()
		return false, err
	}
	t := c.now().UnixMicro()
	row := &variantRow{User: img.User, Identifier: img.Identifier, Hash: hash, Size: int64(len(data)), Created: t, LastUsed: t,
		BlobToken: img.BlobToken, Chain: name.Chain, Format: name.Format}
	err = c.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var one int
		err := c.db.forUpdate(tx.NewSelect().Model((*imageRow)(nil)).ColumnExpr("1").
			Where("user_name = ? AND identifier = ? AND blob_token = ?", img.User, img.Identifier, img.BlobToken)).
			Scan(ctx, &one)
		if errors.Is(err, sql.ErrNoRows) {
			return c.db.release(ctx, tx, res) // the image is gone: so is its variant
		}
		if err != nil {
			return err
		}
		if err := c.db.checkVariantQuota(ctx, tx, img, hash); err != nil {
			return err
		}
		q := tx.NewInsert().Model(row)
		if c.db.kind == mysqlKind {
			q = q.On("DUPLICATE KEY UPDATE").Set("size = VALUES(size)").Set("created = VALUES(created)").Set("last_used = VALUES(last_used)").
				Set("blob_token = VALUES(blob_token)").Set("chain = VALUES(chain)").Set("format = VALUES(format)")
		} else {
			q = q.On("CONFLICT (user_name, identifier, hash) DO UPDATE").
				Set("size = EXCLUDED.size").Set("created = EXCLUDED.created").Set("last_used = EXCLUDED.last_used").
				Set("blob_token = EXCLUDED.blob_token").Set("chain = EXCLUDED.chain").Set("format = EXCLUDED.format")
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
		stored = true
		return c.db.claim(ctx, tx, res)
	})
	if errors.Is(err, ErrReservationLost) {
		err = errors.Join(err, c.db.requeue(ctx, res))
	}
	if err != nil {
		release()
		return false, fmt.Errorf("storage: record variant %s: %w", hash, err)
	}
	if !stored {
		return false, nil // its blob is released: the caller may wake a collector
	}
	if c.cfg.MaxBytes > 0 && c.estimate.Add(row.Size) > c.cfg.MaxBytes {
		return true, c.evict(ctx)
	}
	return true, nil
}

// Purge removes every cached variant of an image, for a metadata change:
// their records go and their blobs are queued for deletion (a Collector
// deletes them).
func (c *VariantCache) Purge(ctx context.Context, user, id string) error {
	err := c.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return c.db.dropVariants(ctx, tx, user, id)
	})
	if err != nil {
		return fmt.Errorf("storage: purge variants %s/%s: %w", user, id, err)
	}
	return nil
}

// dropVariants deletes the variant records of an image inside tx and
// queues their blobs' deletion.
func (db *DB) dropVariants(ctx context.Context, tx bun.Tx, user, id string) error {
	var rows []variantRow
	if err := tx.NewSelect().Model(&rows).Column("user_name", "identifier", "hash", "blob_token").
		Where("user_name = ? AND identifier = ?", user, id).Scan(ctx); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	keys := make([]string, len(rows))
	for i := range rows {
		keys[i] = rows[i].key()
	}
	if _, err := tx.NewDelete().Model((*variantRow)(nil)).
		Where("user_name = ? AND identifier = ?", user, id).Exec(ctx); err != nil {
		return err
	}
	return db.enqueue(ctx, tx, keys, false, time.Now())
}

// Flush writes the remembered last-use times and evicts expired and
// over-cap variants. On failure the last-use times are kept for the next
// flush (merged with those remembered since: the later time of a variant
// wins).
func (c *VariantCache) Flush(ctx context.Context) error {
	c.mu.Lock()
	batch := c.pending
	c.pending = make(map[variantID]int64, len(batch))
	c.mu.Unlock()
	if len(batch) > 0 {
		err := c.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for v, t := range batch {
				if _, err := tx.NewUpdate().Model((*variantRow)(nil)).Set("last_used = ?", t).
					Where("user_name = ? AND identifier = ? AND hash = ? AND last_used < ?", v.user, v.id, v.hash, t).
					Exec(ctx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			c.keep(batch)
			return fmt.Errorf("storage: flush variant last use: %w", err)
		}
	}
	if c.cfg.MaxBytes > 0 || c.cfg.MaxAge > 0 {
		return c.evict(ctx)
	}
	return nil
}

// keep puts back the last-use times of a flush that failed: a variant
// used since keeps the later time, and no variant is added past
// maxPending.
func (c *VariantCache) keep(batch map[variantID]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for v, t := range batch {
		if have, ok := c.pending[v]; ok {
			c.pending[v] = max(have, t)
		} else if len(c.pending) < maxPending {
			c.pending[v] = t
		}
	}
}

// Close writes the remembered last-use times. It does not close the
// database or the blob store.
func (c *VariantCache) Close(ctx context.Context) error { return c.Flush(ctx) }

// CacheStats are the cache's counters for metrics.
type CacheStats struct {
	// Bytes is the total size of cached variants as last summed, plus this
	// instance's writes since (0 when the cache has no cap, which never
	// sums).
	Bytes int64
	// Evictions and EvictedBytes count what this instance evicted.
	Evictions, EvictedBytes int64
}

// Stats returns the counters.
func (c *VariantCache) Stats() CacheStats {
	return CacheStats{Bytes: c.estimate.Load(), Evictions: c.evictions.Load(), EvictedBytes: c.evicted.Load()}
}

// TotalBytes sums the sizes of every cached variant in the database.
func (c *VariantCache) TotalBytes(ctx context.Context) (int64, error) {
	var total int64
	err := c.db.bun.NewSelect().Model((*variantRow)(nil)).ColumnExpr("COALESCE(SUM(size), 0)").Scan(ctx, &total)
	if err != nil {
		return 0, fmt.Errorf("storage: sum variants: %w", err)
	}
	return total, nil
}

// evict removes expired variants, then, when the total is over MaxBytes,
// least recently used ones until it is at most lowWater of MaxBytes.
func (c *VariantCache) evict(ctx context.Context) error {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	if c.cfg.MaxAge > 0 {
		cutoff := c.now().Add(-c.cfg.MaxAge).UnixMicro()
		for {
			n, _, err := c.evictBatch(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("created < ?", cutoff).OrderExpr("created ASC")
			}, -1)
			if err != nil || n == 0 {
				if err != nil {
					return err
				}
				break
			}
		}
	}
	if c.cfg.MaxBytes == 0 {
		return nil
	}
	total, err := c.TotalBytes(ctx)
	if err != nil {
		return err
	}
	target := int64(float64(c.cfg.MaxBytes) * lowWater)
	for over := total > c.cfg.MaxBytes; over && total > target; {
		n, freed, err := c.evictBatch(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.OrderExpr("last_used ASC")
		}, total-target)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		total -= freed
	}
	c.estimate.Store(total)
	return nil
}

// evictBatch deletes up to 100 variants that pick selects, in its order,
// stopping once need bytes are freed (need < 0: no byte goal). A row that
// another instance deleted first is skipped, so concurrent evictions
// neither fail nor count twice.
func (c *VariantCache) evictBatch(ctx context.Context, pick func(*bun.SelectQuery) *bun.SelectQuery, need int64) (n int, freed int64, err error) {
	var rows []variantRow
	if err := pick(c.db.bun.NewSelect().Model(&rows)).Limit(100).Scan(ctx); err != nil {
		return 0, 0, fmt.Errorf("storage: pick variants to evict: %w", err)
	}
	for _, r := range rows {
		if need >= 0 && freed >= need {
			break
		}
		// The row and a queued deletion of its blob commit together, so a
		// blob store that fails now only delays the blob's deletion.
		q := queueRow{Key: r.key(), Due: time.Now().UnixMicro(), Created: time.Now().UnixMicro()}
		err := c.db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := deleted(tx.NewDelete().Model((*variantRow)(nil)).
				Where("user_name = ? AND identifier = ? AND hash = ?", r.User, r.Identifier, r.Hash).Exec(ctx)); err != nil {
				return err
			}
			_, err := tx.NewInsert().Model(&q).Exec(ctx)
			return err
		})
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err != nil {
			return n, freed, fmt.Errorf("storage: evict variant: %w", err)
		}
		if _, err := c.coll.process(ctx, q); err != nil {
			return n, freed, err
		}
		n++
		freed += r.Size
		c.evictions.Add(1)
		c.evicted.Add(r.Size)
	}
	if n == 0 && len(rows) > 0 && (need < 0 || freed < need) {
		// Everything picked was taken by another instance: look again.
		return len(rows), 0, nil
	}
	return n, freed, nil
}

// VariantName names a variant to Put: its hash (the cache key, of chain and
// format) and, for listings, the chain and output format that made it.
type VariantName struct {
	Hash   string
	Chain  string // the canonical transformation chain, steps separated by "|"
	Format string // the output format, such as png
}

// Variant is one cached variant of an image as the variants table
// records it: its hash (of chain and format), the chain and format (empty
// for variants cached before migration step 16), size, and when it was
// stored and last served (last use is written in batches, see Flush).
type Variant struct {
	Hash, Chain, Format string
	Size                int64
	Created, LastUsed   time.Time
}

// Variants lists the cached variants of the image user/id, most recently
// used first; none is an empty list.
func (db *DB) Variants(ctx context.Context, user, id string) ([]Variant, error) {
	var rows []variantRow
	err := db.bun.NewSelect().Model(&rows).Where("user_name = ? AND identifier = ?", user, id).
		OrderExpr("last_used DESC, hash ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: variants of %s/%s: %w", user, id, err)
	}
	out := make([]Variant, len(rows))
	for i, r := range rows {
		out[i] = Variant{Hash: r.Hash, Chain: r.Chain, Format: r.Format, Size: r.Size, Created: fromMicros(r.Created), LastUsed: fromMicros(r.LastUsed)}
	}
	return out, nil
}
