package main

import (
	"log/slog"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// usageWorker writes the usage counted in memory (storage.Usage.Flush)
// every audit.flush (default 5s). It does not flush at the end: counts
// added while the server drains come later, so App.stop flushes once the
// requests and the workers have stopped, before the database closes.
func usageWorker(u *storage.Usage, cfg storage.UsageConfig, log *slog.Logger) *worker {
	return newWorker("usage counters", cfg.Flush, usageWorkerInterval, counted(u.Flush), log)
}

// usageWorkerInterval is audit.flush's default.
const usageWorkerInterval = 5 * time.Second

// auditWorker deletes the audit entries past audit.retention
// (storage.Usage.PurgeAudit) at start and every hour.
func auditWorker(u *storage.Usage, log *slog.Logger) *worker {
	return newWorker("audit retention", time.Hour, time.Hour, counted(u.PurgeAudit), log)
}
