package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// resumableGrace is how old an object under uploads/ with no upload must
// be to be deleted: younger, its upload may be being created.
const resumableGrace = time.Hour

// resumableWorker deletes the parts of resumable uploads that expired
// (uploads.resumableTTL) and what killed servers left of parts being
// written (storage.Resumable.Sweep), at start and every ten minutes. Every
// instance sharing the store may run it: a deletion is idempotent.
func resumableWorker(r *storage.Resumable, log *slog.Logger) *worker {
	return newWorker("resumable uploads", 10*time.Minute, 10*time.Minute, func(ctx context.Context) (int, error) {
		rep, err := r.Sweep(ctx, time.Now(), resumableGrace, true)
		return int(rep.Expired.Repaired + rep.Orphans.Repaired), err
	}, log)
}
