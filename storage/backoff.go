package storage

import (
	"math/rand/v2"
	"time"
)

// Backoff is the wait after the attempts+1-th failure: lo doubled per
// earlier failure up to hi, drawn between its half and its whole so that
// the retries of many clients and instances do not arrive together. It is
// the one backoff of the service's retries: the queues' jobs and erasure
// steps here, the outbox's deliveries and a bus's redials (api/outbox).
func Backoff(lo, hi time.Duration, attempts int) time.Duration {
	b := lo << uint(max(attempts, 0))
	if b > hi || b <= 0 || attempts > 40 {
		b = hi
	}
	return b/2 + rand.N(b/2+1)
}

// retryAfter is Backoff for a row whose due time is also its lease (a
// taken job stays hidden from other instances until then): never under
// lo, so a job is hidden at least as long as its first wait.
func retryAfter(lo, hi time.Duration, attempts int) time.Duration {
	return max(Backoff(lo, hi, attempts), lo)
}
