package engine

import (
	"errors"
	"net/http"
	"testing"
)

// unavailableGuest is a guest that cannot run yet, as a WebAssembly filter
// still loading: its parameter check fails with a 503.
type unavailableGuest struct{ goGuest }

type loadingErr struct{}

func (loadingErr) Error() string         { return "filter late is still loading" }
func (loadingErr) HTTPStatus() int       { return http.StatusServiceUnavailable }
func (loadingErr) PublicMessage() string { return "filter late is still loading" }

func (*unavailableGuest) CheckParams(map[string]string) (map[string]string, error) {
	return nil, loadingErr{}
}

// TestGuestUnavailable: a guest's 5xx from its parameter check is kept, not
// turned into a 400, so that the api answers with the guest's status.
func TestGuestUnavailable(t *testing.T) {
	e := newTestEngine(t, Config{})
	e.Registry().SetGuests(staticGuests{"late": &unavailableGuest{}, "invert": &goGuest{}})
	_, err := e.ParseChain([]string{"invert", "late"})
	var le loadingErr
	if err == nil || errors.Is(err, ErrInvalid) || !errors.As(err, &le) {
		t.Fatalf("err = %v, want the guest's 503 kept", err)
	}
	if _, err := e.ParseChain([]string{"invert:size=x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a guest's bad parameter: err = %v, want invalid", err)
	}
}
