package main

import (
	"log/slog"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// variantCacheWorker writes the variant cache's last-use times and evicts
// expired and over-cap variants (storage.VariantCache.Flush) every
// cache.flushInterval (default 5s). App.stop flushes once more (Close)
// after the requests and this worker have stopped.
func variantCacheWorker(c *storage.VariantCache, cfg storage.CacheConfig, log *slog.Logger) *worker {
	return newWorker("variant cache", cfg.FlushInterval, 5*time.Second, counted(c.Flush), log)
}
