package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// uploadTokenKeep is how long an upload token is kept after it expired:
// an upload with it is told "expired" rather than "unknown" meanwhile.
const uploadTokenKeep = 24 * time.Hour

// uploadTokenWorker deletes the upload tokens that expired more than
// uploadTokenKeep ago (storage.DB.PurgeUploadTokens), at start and every
// hour.
func uploadTokenWorker(db *storage.DB, log *slog.Logger) *worker {
	return newWorker("upload token purge", time.Hour, time.Hour, func(ctx context.Context) (int, error) {
		_, err := db.PurgeUploadTokens(ctx, time.Now().Add(-uploadTokenKeep))
		return 0, err
	}, log)
}
