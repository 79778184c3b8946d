package storage

import (
	"errors"
	"fmt"
	"time"
)

// More error kinds; see also ErrNotExist and ErrExist in types.go.
var (
	// ErrInvalid: an argument is malformed, such as an unknown sort field,
	// a negative page, an over-long name or a rule naming a missing group.
	ErrInvalid = errors.New("storage: invalid argument")
	// ErrDecrypt: a stored private key cannot be decrypted, because the
	// database was opened with a different Options.Secret or without one.
	ErrDecrypt = errors.New("storage: cannot decrypt private key (wrong or missing secret)")
)

// ErrUnavailable: a backend did not answer within its timeout, or failed
// in a way a retry may mend. Every *UnavailableError is one.
var ErrUnavailable = errors.New("storage: backend unavailable")

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

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes every UnavailableError match ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// HTTPStatus is 503: the request may succeed later.
func (e *UnavailableError) HTTPStatus() int { return 503 }

// PublicMessage names the backend and the bound, nothing internal.
func (e *UnavailableError) PublicMessage() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("The %s did not answer within %s; try again later", e.Backend, e.Timeout)
	}
	return fmt.Sprintf("The %s is unavailable; try again later", e.Backend)
}
