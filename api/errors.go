package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// Service error codes (REFERENCE.md section 2); 0 is "unspecified".
const (
	codeMissingParam      = 101
	codeInvalidTimestamp  = 102
	codeSignatureMismatch = 103
	codeTimestampExpired  = 104
	codeNoImageAttached   = 201
	codeUnsupportedType   = 203
	codeInvalidImage      = 205
)

// Error is an error with an HTTP status, a public message and a service error
// code. Only api and web build them; everything else returns kinds that
// httpError maps.
type Error struct {
	Status int
	Msg    string
	Code   int
	// Header holds extra response headers (e.g. Allow on 405).
	Header http.Header
	err    error
}

func (e *Error) Error() string {
	if e.err != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Msg, e.err)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Msg)
}

func (e *Error) Unwrap() error { return e.err }

// HTTPStatus is the error's status; with it an *Error tells a listener
// guest "too large" (413) from "invalid".
func (e *Error) HTTPStatus() int { return e.Status }

// publicError is an error from another package that carries its own status
// and client-facing message: a WebAssembly filter's rejection, crash or
// timeout. One that also has RetryAfter() time.Duration (a busy filter)
// gets a Retry-After header.
type publicError interface {
	error
	HTTPStatus() int
	PublicMessage() string
}

// retryAfter is sent with 503s for a backend that failed: clients may try
// again in a second.
var retryAfter = http.Header{"Retry-After": []string{"1"}}

// errorf builds an *Error with code 0.
func errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// coded builds an *Error with a service error code.
func coded(status, code int, msg string) *Error {
	return &Error{Status: status, Msg: msg, Code: code}
}

// httpError maps any error to the *Error a client sees. Unknown errors are
// 500 with a generic message; the cause goes to the log only.
func httpError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if ue, ok := storage.AsUnavailable(err); ok {
		return &Error{Status: http.StatusServiceUnavailable, Msg: ue.PublicMessage(), Header: retryAfter, err: err}
	}
	var pe publicError
	if errors.As(err, &pe) && pe.HTTPStatus() >= 400 && pe.HTTPStatus() <= 599 {
		e := &Error{Status: pe.HTTPStatus(), Msg: pe.PublicMessage(), err: err}
		if ra, ok := pe.(interface{ RetryAfter() time.Duration }); ok && ra.RetryAfter() > 0 {
			e.Header = http.Header{"Retry-After": []string{strconv.Itoa(int(max(ra.RetryAfter().Round(time.Second), time.Second) / time.Second))}}
		}
		return e
	}
	var ee *engine.Error
	if errors.As(err, &ee) {
		switch ee.Kind {
		case engine.KindInvalid:
			return &Error{Status: http.StatusBadRequest, Msg: ee.Msg, err: err}
		case engine.KindUnsupported:
			return &Error{Status: http.StatusUnsupportedMediaType, Msg: ee.Msg, Code: codeUnsupportedType, err: err}
		case engine.KindCorrupt:
			return &Error{Status: http.StatusUnsupportedMediaType, Msg: "Invalid image", Code: codeInvalidImage, err: err}
		case engine.KindTooLarge:
			return &Error{Status: http.StatusRequestEntityTooLarge, Msg: ee.Msg, err: err}
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &Error{Status: http.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf("Request body too large (the limit is %d bytes)", mbe.Limit), err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Status: http.StatusServiceUnavailable, Msg: "Request timed out", Header: retryAfter, err: err}
	}
	if errors.Is(err, context.Canceled) {
		// 499 in nginx terms; the client is gone, the status is for the log.
		return &Error{Status: 499, Msg: "Client closed request", err: err}
	}
	if errors.Is(err, storage.ErrNotExist) {
		return &Error{Status: http.StatusNotFound, Msg: "Not Found", err: err}
	}
	return &Error{Status: http.StatusInternalServerError, Msg: "Internal server error", err: err}
}
