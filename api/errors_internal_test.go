package api

import (
	"fmt"
	"net/http"
	"testing"
)

type unavailableErr struct{}

func (unavailableErr) Error() string         { return "filter late is still loading" }
func (unavailableErr) HTTPStatus() int       { return http.StatusServiceUnavailable }
func (unavailableErr) PublicMessage() string { return "filter late is still loading" }

// TestPublicErrorRetryAfter: another package's 503 (a filter still loading)
// keeps its message and tells clients when to try again.
func TestPublicErrorRetryAfter(t *testing.T) {
	e := httpError(fmt.Errorf("chain: %w", unavailableErr{}))
	if e.Status != http.StatusServiceUnavailable || e.Msg != "filter late is still loading" || e.Header.Get("Retry-After") != "1" {
		t.Fatalf("httpError = %+v", e)
	}
}
