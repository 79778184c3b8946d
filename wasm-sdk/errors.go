package vitrine

import (
	"errors"
	"fmt"
)

// The errors the host answers with (ABI.md section 5), to match with
// errors.Is. Every error the SDK returns for a host call wraps one of them and
// names the host function.
var (
	// ErrNotFound means the named thing does not exist: a parameter that is
	// absent, settings the manifest does not have, metadata where there is no
	// image.
	ErrNotFound = errors.New("not found")
	// ErrFault means a buffer lay outside the guest's memory.
	ErrFault = errors.New("buffer outside guest memory")
	// ErrInvalid means an argument was invalid: bad JSON, a pixel buffer of the
	// wrong length, a status that is not 4xx, text that is not UTF-8.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnavailable means the function is not available in this call, such as
	// pixels in a listener or StatsSet outside stats.get.
	ErrUnavailable = errors.New("not available in this call")
	// ErrLimit means a limit was exceeded: an output larger than the server's
	// image limits, metadata too large, too many counters or statistics too
	// large.
	ErrLimit = errors.New("limit exceeded")
	// ErrNoHost means the code does not run inside vitrine: the package was
	// built for another GOOS than wasip1, for a native unit test.
	ErrNoHost = errors.New("no vitrine host: host functions work only in a GOOS=wasip1 build loaded by vitrine")
)

// The host's return codes (ABI.md section 5).
const (
	codeNotFound    = -1
	codeFault       = -2
	codeInvalid     = -3
	codeUnavailable = -4
	codeLimit       = -5
	// codeNoHost is not part of the ABI: the native fallback answers it.
	codeNoHost = -1000
)

// codeError turns a negative return code of the host function fn into an
// error that wraps the matching sentinel.
func codeError(fn string, code int32) error {
	var kind error
	switch code {
	case codeNotFound:
		kind = ErrNotFound
	case codeFault:
		kind = ErrFault
	case codeInvalid:
		kind = ErrInvalid
	case codeUnavailable:
		kind = ErrUnavailable
	case codeLimit:
		kind = ErrLimit
	case codeNoHost:
		kind = ErrNoHost
	default:
		return fmt.Errorf("vitrine: %s: unknown host error code %d", fn, code)
	}
	return fmt.Errorf("vitrine: %s: %w", fn, kind)
}
