package filters

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Kind classifies what went wrong in a filter, so that callers branch with
// errors.Is (and api maps statuses) without reading messages.
type Kind int

// The kinds of filter errors.
const (
	// KindInvalid is a request the filter's manifest refuses: a parameter
	// that is missing, unknown, unparsable or out of range (400).
	KindInvalid Kind = iota + 1
	// KindRejected is a deliberate rejection by the guest (`reject`): the
	// status (4xx) and message are the guest's.
	KindRejected
	// KindFailed is a guest crash: a trap, a non-zero result, memory past
	// the cap, proc_exit, or a filter that is no longer loaded (500).
	KindFailed
	// KindTimeout is a call stopped at the filter's timeoutMs limit (504).
	KindTimeout
	// KindLoad is a filter folder that cannot be loaded (bad manifest,
	// missing ABI marker, forbidden import...).
	KindLoad
	// KindBusy is a call the filter had no room for: its queue was full,
	// or no instance came free within its queue wait (503, Retry-After).
	KindBusy
	// KindUnavailable is a filter that exists but cannot run here now:
	// its first version is still loading, or, deployed through the API,
	// it failed or is not granted its capabilities on this instance (503).
	KindUnavailable
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindRejected:
		return "rejected"
	case KindFailed:
		return "failed"
	case KindTimeout:
		return "timeout"
	case KindLoad:
		return "load"
	case KindBusy:
		return "busy"
	case KindUnavailable:
		return "unavailable"
	}
	return "unknown"
}

// Error is a filter error. Msg is safe to show to clients; Err carries the
// internal cause (a wazero trap, an exit code) for the log.
type Error struct {
	Kind   Kind
	Filter string
	// Status is the HTTP status of a KindRejected error (400-499).
	Status int
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the internal cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same kind with no message,
// so that errors.Is(err, filters.ErrTimeout) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Kind == e.Kind
}

// HTTPStatus is the status a client sees for this error.
func (e *Error) HTTPStatus() int {
	switch e.Kind {
	case KindInvalid:
		return http.StatusBadRequest
	case KindRejected:
		return e.Status
	case KindTimeout:
		return http.StatusGatewayTimeout
	case KindBusy, KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// RetryAfter is how long a client should wait before trying again; 0 when
// trying again is no use.
func (e *Error) RetryAfter() time.Duration {
	if e.Kind == KindBusy || e.Kind == KindUnavailable {
		return time.Second
	}
	return 0
}

// PublicMessage is the message a client sees for this error.
func (e *Error) PublicMessage() string { return e.Msg }

// Sentinels for errors.Is.
var (
	ErrInvalid  = &Error{Kind: KindInvalid}
	ErrRejected = &Error{Kind: KindRejected}
	ErrFailed   = &Error{Kind: KindFailed}
	ErrTimeout  = &Error{Kind: KindTimeout}
	ErrLoad     = &Error{Kind: KindLoad}
	ErrBusy     = &Error{Kind: KindBusy}
	// ErrUnavailable matches the error of a filter still loading.
	ErrUnavailable = &Error{Kind: KindUnavailable}
)

// invalidf is a KindInvalid error with a public message.
func invalidf(format string, args ...any) error {
	return &Error{Kind: KindInvalid, Msg: fmt.Sprintf(format, args...)}
}

// loadErr is a KindLoad error for the filter folder name, wrapping the
// reason.
func loadErr(name string, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Kind == KindLoad {
		return err
	}
	return &Error{Kind: KindLoad, Filter: name, Msg: "filter " + name, Err: err}
}

// failed is the KindFailed error of a guest crash.
func failed(name string, cause error) error {
	return &Error{Kind: KindFailed, Filter: name, Msg: "Filter " + name + " failed", Err: cause}
}

// timedOut is the KindTimeout error of a call stopped at its limit.
func timedOut(name string, cause error) error {
	return &Error{Kind: KindTimeout, Filter: name, Msg: "Filter " + name + " timed out", Err: cause}
}

// busy is the KindBusy error of a call the filter had no room for.
func busy(name string, cause error) error {
	return &Error{Kind: KindBusy, Filter: name, Msg: "Filter " + name + " is busy; try again later", Err: cause}
}

// stillLoading is the KindUnavailable error of a filter whose first
// version is still loading.
func stillLoading(name string) error {
	return &Error{Kind: KindUnavailable, Filter: name, Msg: "filter " + name + " is still loading"}
}

// NotGrantedError is a filter asking for a capability that this
// instance's filters.allow does not grant: the instance's configuration,
// not the filter, stops it (StateUnavailable).
type NotGrantedError struct{ Capability string }

func (e *NotGrantedError) Error() string {
	return fmt.Sprintf("asks for capability %q, which filters.allow does not grant", e.Capability)
}

// cannotRun is the KindUnavailable error of a filter deployed through the
// API that this instance cannot run: reason is public (unavailable: not
// granted here) or stays in the log and GET /filters (failed).
func cannotRun(name string, unavailable bool, reason string) error {
	msg := "Filter " + name + " failed to load on this instance (GET /filters says why)"
	if unavailable {
		msg = "Filter " + name + " cannot run on this instance: it " + reason + " here"
	}
	return &Error{Kind: KindUnavailable, Filter: name, Msg: msg + "; another instance may serve it, try again"}
}

// isKind reports whether err is a filter error of kind k.
func isKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}
