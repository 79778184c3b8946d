package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// Service error codes of the error body (listed in api/README.md, The API); 0 is
// "unspecified".
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
// code. Only api builds them; other packages' errors answer publicError,
// which httpError maps.
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

// publicError is the one error model api consumes: an error of any package
// (engine, filters, storage) that knows the HTTP status and the message a
// client sees for it. Its Error() text, and any error it wraps, go to the
// log only. Optional methods add to the response: ErrorCode() int, the
// service error code of the body, and RetryAfter() time.Duration, a
// Retry-After header (a busy filter, an unavailable backend).
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

// httpError maps any error to the *Error a client sees; it is the one place
// where api turns errors into statuses. Unknown errors are 500 with a
// generic message; the cause goes to the log only.
func httpError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if ue, ok := storage.AsUnavailable(err); ok {
		// A driver's connection error that storage did not wrap itself.
		return fromPublic(ue, err)
	}
	var pe publicError
	if errors.As(err, &pe) && pe.HTTPStatus() >= 400 && pe.HTTPStatus() <= 599 {
		return fromPublic(pe, err)
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
	return &Error{Status: http.StatusInternalServerError, Msg: "Internal server error", err: err}
}

// fromPublic is the *Error of pe, found in the chain of err.
func fromPublic(pe publicError, err error) *Error {
	e := &Error{Status: pe.HTTPStatus(), Msg: pe.PublicMessage(), err: err}
	if c, ok := pe.(interface{ ErrorCode() int }); ok {
		e.Code = c.ErrorCode()
	}
	if ra, ok := pe.(interface{ RetryAfter() time.Duration }); ok && ra.RetryAfter() > 0 {
		e.Header = http.Header{"Retry-After": []string{strconv.Itoa(int(max(ra.RetryAfter().Round(time.Second), time.Second) / time.Second))}}
	}
	return e
}
