package storage

import (
	"context"
	"time"
)

// uploads sweeps the parts of resumable uploads.
func (c *checker) uploads(ctx context.Context) error {
	if c.opts.Uploads == nil {
		return nil
	}
	rep, err := c.opts.Uploads.Sweep(ctx, time.Now(), c.opts.Grace, c.opts.Repair)
	c.r.ExpiredUploads, c.r.OrphanUploadParts = rep.Expired, rep.Orphans
	return err
}
