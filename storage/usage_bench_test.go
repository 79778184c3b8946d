package storage

import "testing"

// BenchmarkUsageAdd is the cost a request pays to be counted (two Adds:
// per status and per key), with every core counting at once.
func BenchmarkUsageAdd(b *testing.B) {
	u := NewUsage(nil, UsageConfig{})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u.Add(MetricRequests, "200", 1)
			u.Add(MetricKeyRequests, "admin", 1)
		}
	})
}
