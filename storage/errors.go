package storage

import "errors"

// More error kinds; see also ErrNotExist and ErrExist in types.go.
var (
	// ErrInvalid: an argument is malformed, such as an unknown sort field,
	// a negative page, an over-long name or a rule naming a missing group.
	ErrInvalid = errors.New("storage: invalid argument")
	// ErrDecrypt: a stored private key cannot be decrypted, because the
	// database was opened with a different Options.Secret or without one.
	ErrDecrypt = errors.New("storage: cannot decrypt private key (wrong or missing secret)")
)
