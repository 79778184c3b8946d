package main

import (
	"log/slog"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// blobQueueWorker deletes the blobs the blob queue holds once due
// (storage.Collector.Drain) every blobQueue.interval (default 10s); a
// request that queued deletions wakes it (api.Deps.Collector).
func blobQueueWorker(c *storage.Collector, cfg storage.CollectorConfig, log *slog.Logger) *worker {
	return newWorker("blob queue", cfg.Interval, 10*time.Second, c.Drain, log)
}
