package api

import (
	"fmt"
	"testing"
	"time"
)

// TestVariationsConfig: the policy of which images get variations and at
// which scales, its checks, and the builder's own defaults (not the blob
// queue's).
func TestVariationsConfig(t *testing.T) {
	off := false
	t.Run("Validate", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cfg  VariationsConfig
			ok   bool
		}{
			{"zero", VariationsConfig{}, true},
			{"scales", VariationsConfig{Scales: []int{8, 4}}, true},
			{"scale 3", VariationsConfig{Scales: []int{2, 3}}, false},
			{"negative width", VariationsConfig{MinWidth: -1}, false},
			{"negative interval", VariationsConfig{Interval: -time.Second}, false},
			{"retryMax under retryMin", VariationsConfig{RetryMin: time.Minute, RetryMax: time.Second}, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				if err := c.cfg.Validate(); (err == nil) != c.ok {
					t.Fatalf("Validate = %v; want ok %v", err, c.ok)
				}
			})
		}
	})
	t.Run("Wants", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cfg  VariationsConfig
			w, h int
			size int64
			want bool
		}{
			{"default, wide", VariationsConfig{}, 1024, 10, 1, true},
			{"default, high", VariationsConfig{}, 10, 2000, 1, true},
			{"default, small", VariationsConfig{}, 1023, 1023, 1 << 30, false},
			{"minBytes", VariationsConfig{MinBytes: 1000}, 10, 10, 1000, true},
			{"minWidth", VariationsConfig{MinWidth: 4000}, 3000, 2000, 1, false},
			{"off", VariationsConfig{Enabled: &off}, 4000, 3000, 1, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				if got := c.cfg.Wants(c.w, c.h, c.size); got != c.want {
					t.Fatalf("Wants(%d, %d, %d) = %v", c.w, c.h, c.size, got)
				}
			})
		}
	})
	t.Run("Ladder", func(t *testing.T) {
		for _, c := range []struct {
			scales []int
			want   string
		}{{nil, "[2 4 8]"}, {[]int{8, 4, 8}, "[4 8]"}} {
			if got := fmt.Sprint(VariationsConfig{Scales: c.scales}.Ladder()); got != c.want {
				t.Errorf("Ladder of %v = %s; want %s", c.scales, got, c.want)
			}
		}
	})
	t.Run("defaults", func(t *testing.T) {
		for _, c := range []struct {
			cfg  VariationsConfig
			want string
		}{
			{VariationsConfig{}, "10s 30s 30m0s"},
			{VariationsConfig{Interval: time.Minute, RetryMin: time.Hour}, "1m0s 1h0m0s 1h0m0s"},
		} {
			d := c.cfg.WithDefaults()
			if got := fmt.Sprint(d.Interval, " ", d.RetryMin, " ", d.RetryMax); got != c.want {
				t.Errorf("WithDefaults of %+v: interval, retries %s; want %s", c.cfg, got, c.want)
			}
		}
	})
}
