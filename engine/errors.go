package engine

import (
	"errors"
	"fmt"
	"net/http"
)

// Kind classifies engine errors so callers can branch with errors.Is; each
// kind answers an HTTP status and a public message (Error.HTTPStatus,
// Error.PublicMessage), which api turns into a response in one place.
type Kind int

// The kinds of engine errors.
const (
	// KindInternal is a failure that is not the client's fault.
	KindInternal Kind = iota
	// KindInvalid is a bad transformation chain or parameter (400).
	KindInvalid
	// KindUnsupported is an input type no loader handles (415, code 203).
	KindUnsupported
	// KindCorrupt is input that cannot be decoded or has zero size (415, code 205).
	KindCorrupt
	// KindTooLarge is input over the configured dimension or pixel limits (413).
	KindTooLarge
	// KindInvalidMedia is a video that cannot be decoded (415, code 205);
	// unlike KindCorrupt its message says why, for ffmpeg's own words stay
	// in the log.
	KindInvalidMedia
)

// Error is an engine error with a kind and a public message. Msg is safe to
// show to clients; Err, when set, carries the internal cause for logs.
type Error struct {
	Kind Kind
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the internal cause.
func (e *Error) Unwrap() error { return e.Err }

// HTTPStatus is the status a client sees for this error: 400 for a bad
// chain or parameter, 415 for input that is not a supported image, 413 for
// input over the limits, 500 otherwise.
func (e *Error) HTTPStatus() int {
	switch e.Kind {
	case KindInvalid:
		return http.StatusBadRequest
	case KindUnsupported, KindCorrupt, KindInvalidMedia:
		return http.StatusUnsupportedMediaType
	case KindTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// PublicMessage is the message a client sees: Msg, except for input that
// cannot be decoded (always "Invalid image", whatever the decoder said) and
// internal failures (a generic text; Msg and the cause go to the log only).
func (e *Error) PublicMessage() string {
	switch e.Kind {
	case KindCorrupt:
		return "Invalid image"
	case KindInternal:
		return "Internal server error"
	}
	return e.Msg
}

// ErrorCode is the service error code of the response body (see api/README.md, Errors):
// 203 for an unsupported type, 205 for an invalid image, 0 otherwise.
func (e *Error) ErrorCode() int {
	switch e.Kind {
	case KindUnsupported:
		return 203
	case KindCorrupt, KindInvalidMedia:
		return 205
	}
	return 0
}

// Is reports whether target is an *Error of the same kind, so that
// errors.Is(err, engine.ErrInvalid) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Kind == e.Kind
}

// Sentinels for errors.Is.
var (
	ErrInvalid     = &Error{Kind: KindInvalid}
	ErrUnsupported = &Error{Kind: KindUnsupported}
	ErrCorrupt     = &Error{Kind: KindCorrupt}
	ErrTooLarge    = &Error{Kind: KindTooLarge}
)

// invalidf returns a KindInvalid error with a formatted public message.
func invalidf(format string, args ...any) error {
	return &Error{Kind: KindInvalid, Msg: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of err, KindInternal when it is not an engine error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}
