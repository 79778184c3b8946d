package vitrine

import "fmt"

// readValue reads a value through one of the host functions that copy into a
// guest buffer (ABI.md section 5, "Return codes"): they return the value's full
// size and copy only when it fits. readValue calls read with a buffer of
// sizeHint bytes and, when the value is larger, once more with a buffer of
// exactly its size. fn names the host function in errors.
func readValue(fn string, sizeHint int, read func(buf []byte) int32) ([]byte, error) {
	buf := make([]byte, sizeHint)
	n := read(buf)
	if n < 0 {
		return nil, codeError(fn, n)
	}
	if int(n) <= len(buf) {
		return buf[:n], nil
	}
	buf = make([]byte, n)
	m := read(buf)
	if m < 0 {
		return nil, codeError(fn, m)
	}
	if int(m) > len(buf) {
		// The value cannot change during a call; a host that says otherwise
		// breaks the ABI, and a third read would not be more trustworthy.
		return nil, fmt.Errorf("vitrine: %s: value grew from %d to %d bytes between two reads: %w", fn, n, m, ErrInvalid)
	}
	return buf[:m], nil
}

// status turns the result of a host function that returns 0 on success into
// an error.
func status(fn string, code int32) error {
	if code < 0 {
		return codeError(fn, code)
	}
	return nil
}
