package main

import (
	"fmt"
	"testing"
)

// TestCanaryBucket checks the canary's choice per image: the same subject
// always lands in the same bucket, and 10,000 subjects split near the
// percent asked for.
func TestCanaryBucket(t *testing.T) {
	for _, percent := range []int{1, 10, 50, 90} {
		t.Run(fmt.Sprint(percent), func(t *testing.T) {
			n := 0
			for i := range 10000 {
				s := fmt.Sprintf("alice/%032x", i)
				b := canaryBucket(s)
				if b < 0 || b > 99 || canaryBucket(s) != b {
					t.Fatalf("bucket of %s: %d, then %d", s, b, canaryBucket(s))
				}
				if b < percent {
					n++
				}
			}
			if lo, hi := percent*100-200, percent*100+200; n < lo || n > hi {
				t.Fatalf("%d%% took %d of 10000 subjects", percent, n)
			}
		})
	}
}
