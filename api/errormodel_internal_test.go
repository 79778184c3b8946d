package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
)

// secret stands for internal detail (a path, a query, a driver's message)
// that a cause carries and that must reach the log only.
const secret = "/var/lib/vitrine/db?password=hunter2"

// TestErrorModel: each kind of error of each package maps to its status,
// public message, service code and Retry-After, wrapped with context as
// callers wrap it, and the internal detail never reaches the public
// message.
func TestErrorModel(t *testing.T) {
	cause := errors.New(secret)
	wrap := func(err error) error { return fmt.Errorf("api: get image %s: %w", secret, err) }
	for _, c := range []struct {
		name   string
		err    error
		status int
		msg    string
		code   int
		retry  string
	}{
		{"engine invalid", &engine.Error{Kind: engine.KindInvalid, Msg: "resize: width must be at least 1"}, 400, "resize: width must be at least 1", 0, ""},
		{"engine unsupported", &engine.Error{Kind: engine.KindUnsupported, Msg: "Unsupported image type: text/plain"}, 415, "Unsupported image type: text/plain", codeUnsupportedType, ""},
		{"engine corrupt", &engine.Error{Kind: engine.KindCorrupt, Msg: "VipsJpeg: " + secret, Err: cause}, 415, "Invalid image", codeInvalidImage, ""},
		{"engine too large", &engine.Error{Kind: engine.KindTooLarge, Msg: "Image too large", Err: cause}, 413, "Image too large", 0, ""},
		{"engine internal", &engine.Error{Kind: engine.KindInternal, Msg: "Transformation failed: " + secret, Err: cause}, 500, "Internal server error", 0, ""},
		{"filters invalid", &filters.Error{Kind: filters.KindInvalid, Filter: "x", Msg: "x: unknown parameter y"}, 400, "x: unknown parameter y", 0, ""},
		{"filters rejected", &filters.Error{Kind: filters.KindRejected, Filter: "x", Status: 403, Msg: "Image too small"}, 403, "Image too small", 0, ""},
		{"filters failed", &filters.Error{Kind: filters.KindFailed, Filter: "x", Msg: "Filter x failed", Err: cause}, 500, "Filter x failed", 0, ""},
		{"filters timeout", &filters.Error{Kind: filters.KindTimeout, Filter: "x", Msg: "Filter x timed out", Err: cause}, 504, "Filter x timed out", 0, ""},
		{"filters busy", &filters.Error{Kind: filters.KindBusy, Filter: "x", Msg: "Filter x is busy; try again later", Err: cause}, 503, "Filter x is busy; try again later", 0, "1"},
		{"filters load", &filters.Error{Kind: filters.KindLoad, Filter: "x", Msg: "filter x", Err: cause}, 500, "filter x", 0, ""},
		{"filters unavailable", &filters.Error{Kind: filters.KindUnavailable, Filter: "x", Msg: "filter x is still loading"}, 503, "filter x is still loading", 0, "1"},
		{"storage not exist", fmt.Errorf("storage: image %s: %w", secret, storage.ErrNotExist), 404, "Not Found", 0, ""},
		{"storage exist", fmt.Errorf("storage: short URL %s: %w", secret, storage.ErrExist), 409, "Conflict", 0, ""},
		{"storage invalid", fmt.Errorf("storage: unknown sort field %q: %w", secret, storage.ErrInvalid), 400, "Invalid argument", 0, ""},
		{"storage decrypt", fmt.Errorf("storage: key %s: %w", secret, storage.ErrDecrypt), 500, "Internal server error", 0, ""},
		{"storage unavailable", &storage.UnavailableError{Backend: "database", Op: secret, Timeout: 2 * time.Second, Err: cause}, 503, "The database did not answer within 2s; try again later", 0, "1"},
		{"storage unavailable sentinel", fmt.Errorf("storage: %s: %w", secret, storage.ErrUnavailable), 503, "The storage backend is unavailable; try again later", 0, ""},
		{"api", &Error{Status: 403, Msg: "Permission denied"}, 403, "Permission denied", 0, ""},
		{"body too large", &http.MaxBytesError{Limit: 10}, 413, "Request body too large (the limit is 10 bytes)", 0, ""},
		{"deadline", context.DeadlineExceeded, 503, "Request timed out", 0, "1"},
		{"canceled", context.Canceled, 499, "Client closed request", 0, ""},
		{"unknown", cause, 500, "Internal server error", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, err := range []error{c.err, wrap(c.err)} {
				e := httpError(err)
				if e.Status != c.status || e.Msg != c.msg || e.Code != c.code || e.Header.Get("Retry-After") != c.retry {
					t.Errorf("httpError(%v) = %d %q code %d Retry-After %q; want %d %q code %d Retry-After %q",
						err, e.Status, e.Msg, e.Code, e.Header.Get("Retry-After"), c.status, c.msg, c.code, c.retry)
				}
				if strings.Contains(e.Msg, "hunter2") || strings.Contains(e.Msg, "storage:") {
					t.Errorf("httpError(%v): public message %q leaks internal detail", err, e.Msg)
				}
				if !errors.Is(e, err) && e.Status != 403 {
					t.Errorf("httpError(%v) drops the cause from the log chain", err)
				}
			}
		})
	}
}
