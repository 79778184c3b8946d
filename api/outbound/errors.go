package outbound

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
)

// ErrRefused is the kind of every refusal: errors.Is(err, ErrRefused)
// holds for a connection the guard would not make. errors.As with a
// *RefusedError gives the host, the address and why.
var ErrRefused = errors.New("outbound: refused")

// ErrTooLarge is the kind of a response larger than Config.MaxBytes:
// errors.Is(err, ErrTooLarge) holds for the error of the request (when the
// Content-Length announces it) or of the read that passes the cap.
var ErrTooLarge = errors.New("outbound: response too large")

// RefusedError is a connection the guard refused.
type RefusedError struct {
	// Host is the name (or address literal) the caller asked for; empty
	// for Check, which sees only an address.
	Host string
	// Addr is the address refused, as the resolver or the caller gave it
	// (an IPv4-mapped address stays mapped).
	Addr netip.Addr
	// What says what Addr is: "a private address", "a loopback address".
	What string
}

// Reason is the refusal in a sentence: "169.254.169.254 is a link-local
// cloud metadata address".
func (e *RefusedError) Reason() string {
	if !e.Addr.IsValid() {
		return e.What
	}
	return fmt.Sprintf("%s is %s", e.Addr, e.What)
}

func (e *RefusedError) Error() string {
	if e.Host == "" {
		return "outbound: refused: " + e.Reason()
	}
	return fmt.Sprintf("outbound: refused connection to %s: %s", e.Host, e.Reason())
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// HTTPStatus is 400: the destination a user named is not one vitrine
// connects to.
func (e *RefusedError) HTTPStatus() int { return http.StatusBadRequest }

// PublicMessage names the host and why, but not the address a name
// resolved to: that would let users map the internal network's DNS.
func (e *RefusedError) PublicMessage() string {
	// An address the caller gave (Check's, or a literal in a URL) is
	// named: it was never resolved.
	if a, err := netip.ParseAddr(e.Host); e.Host == "" || err == nil && a == e.Addr {
		return "Refused outbound connection: " + e.Reason()
	}
	return fmt.Sprintf("Refused outbound connection: %s resolves to %s", e.Host, e.What)
}

// TooLargeError is a response larger than the cap.
type TooLargeError struct {
	// Limit is Config.MaxBytes.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("outbound: response larger than %d bytes", e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// HTTPStatus is 413, as for an upload over its cap.
func (e *TooLargeError) HTTPStatus() int { return http.StatusRequestEntityTooLarge }

// PublicMessage says what the cap is.
func (e *TooLargeError) PublicMessage() string {
	return fmt.Sprintf("Remote response larger than %d bytes", e.Limit)
}
