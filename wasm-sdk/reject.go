package vitrine

import (
	"fmt"
	"unicode/utf8"
)

// maxRejectMessage is the longest public message the host takes.
const maxRejectMessage = 1024

// Rejection is the error Reject returns once the host has accepted the
// rejection.
type Rejection struct {
	// Status is the HTTP status of the response, 400-499.
	Status int
	// Message is the public message of the response.
	Message string
}

// Error implements error.
func (r *Rejection) Error() string {
	return fmt.Sprintf("vitrine: rejected with %d: %s", r.Status, r.Message)
}

// Reject ends the request with the HTTP status (400-499) and message, which
// the client sees in the service's usual JSON error, and returns a
// *Rejection. Return it from the transformation or listener at once:
//
//	return vitrine.Reject(400, "images must be at least 100 pixels wide")
//
// A message longer than 1024 bytes is cut. A status outside 400-499 is not
// sent to the host and Reject returns an error matching ErrInvalid, which
// fails the call as any error does.
func Reject(status int, message string) error {
	if status < 400 || status > 499 {
		return fmt.Errorf("vitrine: reject: status %d is not 400-499: %w", status, ErrInvalid)
	}
	message = cut(message, maxRejectMessage)
	if code := hostReject(int32(status), message); code < 0 {
		return codeError("reject", code)
	}
	return &Rejection{Status: status, Message: message}
}

// cut shortens s to at most n bytes without splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
