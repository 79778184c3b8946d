package storage

import (
	"errors"
	"fmt"
	"testing"
)

// TestErasingSaysWhoAndWhat: the refusal of an upload during an erasure,
// from the API's check or the image's own transaction, is ErrErasing and
// tells the client whose erasure and what to do.
func TestErasingSaysWhoAndWhat(t *testing.T) {
	err := fmt.Errorf("commit image: %w", Erasing("alice"))
	var pe interface {
		HTTPStatus() int
		PublicMessage() string
	}
	if !errors.Is(err, ErrErasing) || !errors.As(err, &pe) || pe.HTTPStatus() != 409 ||
		pe.PublicMessage() != "User 'alice' is being erased; try again once the erasure is done" {
		t.Fatalf("%v: is ErrErasing %v, answer %v", err, errors.Is(err, ErrErasing), pe)
	}
}
