package storage

import (
	"testing"
	"time"
)

// TestBackoff: the wait doubles per failure up to its bound, drawn
// between its half and its whole; a lease never falls under the first
// wait.
func TestBackoff(t *testing.T) {
	lo, hi := time.Second, 10*time.Second
	for _, tc := range []struct {
		attempts int
		ceiling  time.Duration
	}{{0, time.Second}, {1, 2 * time.Second}, {3, 8 * time.Second}, {4, hi}, {50, hi}, {-1, time.Second}} {
		seen := map[time.Duration]bool{}
		for range 200 {
			b := Backoff(lo, hi, tc.attempts)
			if b < tc.ceiling/2 || b > tc.ceiling {
				t.Fatalf("Backoff(%v, %v, %d) = %v, want within [%v, %v]", lo, hi, tc.attempts, b, tc.ceiling/2, tc.ceiling)
			}
			seen[b] = true
			if l := retryAfter(lo, hi, tc.attempts); l < lo {
				t.Fatalf("retryAfter(%v, %v, %d) = %v, under %v", lo, hi, tc.attempts, l, lo)
			}
		}
		if len(seen) < 10 {
			t.Errorf("Backoff(%v, %v, %d) drew %d distinct waits in 200, want jitter", lo, hi, tc.attempts, len(seen))
		}
	}
}
