package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/davidbyttow/govips/v2/vips"
)

// libvips is process-wide: it is started once, by the first New, and shut
// down once, by Shutdown, after the server has drained. Its log goes to the
// logger of that first New.
var (
	startOnce    sync.Once
	startErr     error
	shutdownOnce sync.Once
	orcGuard     orcState // what startVips did about liborc
	vipsLog      = slog.Default()
)

// startVips routes libvips logging to slog, starts libvips with one thread
// per pipeline and the operation cache off, and makes its use of liborc safe
// (guardOrc). Why one thread and no cache: every figure in e2e/README.md's
// Performance section was measured that way; the engine bounds parallelism
// itself with a semaphore, and a cache of decoded images only inflates
// memory for a service whose inputs rarely repeat.
func startVips(log *slog.Logger) error {
	startOnce.Do(func() {
		if log != nil {
			vipsLog = log
		}
		vips.LoggingSettings(logVips, vips.LogLevelWarning)
		if err := vips.Startup(&vips.Config{
			ConcurrencyLevel: 1,
			MaxCacheFiles:    0,
			MaxCacheMem:      0,
			MaxCacheSize:     0,
		}); err != nil {
			startErr = fmt.Errorf("engine: libvips cannot start: %w", err)
			return
		}
		orcGuard = guardOrc()
		vipsLog.Debug("libvips: liborc code memory", "state", string(orcGuard))
	})
	return startErr
}

// logVips forwards libvips and govips messages to the engine's logger.
// Warnings are logged at debug level: libvips warns about every slightly
// damaged upload, which is the client's business, not the operator's.
func logVips(domain string, level vips.LogLevel, msg string) {
	switch level {
	case vips.LogLevelError, vips.LogLevelCritical:
		vipsLog.Error("libvips", "domain", domain, "msg", msg)
	default:
		vipsLog.Debug("libvips", "domain", domain, "msg", msg)
	}
}

// Shutdown stops libvips. Call it once from main after every request has
// finished; no Engine may be used afterwards.
func Shutdown() {
	shutdownOnce.Do(func() {
		_ = startVips(nil) // harmless when already started; makes Shutdown-before-New safe
		vips.Shutdown()
	})
}

// acquire takes one pipeline slot, waiting until one is free or ctx ends.
func (e *Engine) acquire(ctx context.Context) error {
	select {
	case e.sem <- struct{}{}:
		return nil
	default:
	}
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	select {
	case e.sem <- struct{}{}:
		return nil
	case <-e.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release frees a slot taken by acquire.
func (e *Engine) release() { <-e.sem }
