package storage

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// Error is a kind of storage error: one of the sentinels below, which
// callers match with errors.Is and which wrapped errors carry with %w. Each
// answers the HTTP status and the public message a client sees; the
// wrapping context (names, paths, queries) goes to the log only.
type Error struct {
	msg    string
	status int
	public string
}

func (e *Error) Error() string { return e.msg }

// HTTPStatus is the status a client sees for this kind.
func (e *Error) HTTPStatus() int { return e.status }

// PublicMessage is the message a client sees for this kind.
func (e *Error) PublicMessage() string { return e.public }

// The kinds of storage errors.
var (
	// ErrNotExist: the image, metadata, short URL, key, group or rule is
	// missing (404).
	ErrNotExist = &Error{"storage: does not exist", http.StatusNotFound, "Not Found"}
	// ErrExist: a unique value (short URL id, public key, group) is taken
	// (409).
	ErrExist = &Error{"storage: already exists", http.StatusConflict, "Conflict"}
	// ErrInvalid: an argument is malformed, such as an unknown sort field,
	// a negative page, an over-long name or a rule naming a missing group
	// (400).
	ErrInvalid = &Error{"storage: invalid argument", http.StatusBadRequest, "Invalid argument"}
	// ErrDecrypt: a stored private key cannot be decrypted, because the
	// database was opened with a different Options.Secret or without one.
	// It is the operator's problem, so a client sees a 500.
	ErrDecrypt = &Error{"storage: cannot decrypt private key (wrong or missing secret)",
		http.StatusInternalServerError, "Internal server error"}
	// ErrUploadTokenSpent: an upload made with an upload token found it
	// without a use left when it committed: used up, revoked or expired
	// meanwhile (the token read again says which). Nothing was written
	// (401).
	ErrUploadTokenSpent = &Error{"storage: upload token has no use left", http.StatusUnauthorized,
		"The upload token has no use left (used up, revoked or expired)"}
	// ErrUnavailable: a backend did not answer within its timeout, or
	// failed in a way a retry may mend (503). Every *UnavailableError is
	// one.
	ErrUnavailable = &Error{"storage: backend unavailable", http.StatusServiceUnavailable,
		"The storage backend is unavailable; try again later"}
)

// UnavailableError says which backend failed an operation and why, with a
// message a client may see (no keys, no addresses). It answers 503.
type UnavailableError struct {
	// Backend is "blob store" or "database".
	Backend string
	// Op is what was being done, for the log.
	Op string
	// Timeout is the bound the operation ran into; 0 when it failed
	// otherwise.
	Timeout time.Duration
	// Err is the cause.
	Err error
}

func (e *UnavailableError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("storage: %s: %s did not answer within %s: %v", e.Op, e.Backend, e.Timeout, e.Err)
	}
	return fmt.Sprintf("storage: %s: %s failed: %v", e.Op, e.Backend, e.Err)
}

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes every UnavailableError match ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// HTTPStatus is 503: the request may succeed later.
func (e *UnavailableError) HTTPStatus() int { return http.StatusServiceUnavailable }

// RetryAfter is how long a client should wait before trying again.
func (e *UnavailableError) RetryAfter() time.Duration { return time.Second }

// PublicMessage names the backend and the bound, nothing internal.
func (e *UnavailableError) PublicMessage() string {
	if e.Op == "transaction" {
		return "The database kept refusing the change for concurrent ones (deadlocks); try again"
	}
	if e.Timeout > 0 {
		return fmt.Sprintf("The %s did not answer within %s; try again later", e.Backend, e.Timeout)
	}
	return fmt.Sprintf("The %s is unavailable; try again later", e.Backend)
}

// AsUnavailable returns err as an *UnavailableError when it is one, or when
// it says that the database could not be reached or went away mid-way:
// a refused or broken connection, a server shutting down or starting up.
// ok is false for any other error (a statement that ran out of time is
// context.DeadlineExceeded, which callers map themselves).
func AsUnavailable(err error) (ue *UnavailableError, ok bool) {
	if errors.As(err, &ue) {
		return ue, true
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, false
	}
	var (
		ne   net.Error
		pe   *pgconn.PgError
		ce   *pgconn.ConnectError
		me   *mysql.MySQLError
		down bool
	)
	switch {
	case errors.As(err, &ne), errors.As(err, &ce), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		down = true
	case errors.As(err, &pe):
		// Class 08: connection exception; 57P01-57P03: the server is
		// shutting down, crashed, or is not yet accepting connections.
		down = strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	case errors.As(err, &me):
		// ER_CON_COUNT_ERROR, ER_SERVER_SHUTDOWN.
		down = me.Number == 1040 || me.Number == 1053
	}
	if !down {
		return nil, false
	}
	return &UnavailableError{Backend: "database", Op: "query", Err: err}, true
}
