package vitrine

import (
	"encoding/json"
	"fmt"
)

// StatsAdd adds delta to the filter's counter name, which the host keeps for
// the life of the server process and shows in GET /stats under
// custom.<filter>.<name>. A name is 1 to 64 of a-z, A-Z, 0-9, '_', '.' and '-'.
// A counter stops at the int64 bounds instead of wrapping around; a filter
// has at most 256 counters, and a new name past them fails with ErrLimit.
func StatsAdd(name string, delta int64) error {
	if err := checkStatName(name); err != nil {
		return err
	}
	return status("stats_add", hostStatsAdd(name, delta))
}

// StatsSet sets custom.<filter>.<name> of this GET /stats response to v
// encoded as JSON, beside the filter's counters (a value replaces the
// counter of the same name in this response). It works only in a listener
// called for stats.get; elsewhere it fails with ErrUnavailable. It fails
// with ErrLimit for a value longer than 64 KiB, and past 256 KiB of values
// or 256 names in one call.
func StatsSet(name string, v any) error {
	if err := checkStatName(name); err != nil {
		return err
	}
	value, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("vitrine: stats_set: %v: %w", err, ErrInvalid)
	}
	return status("stats_set", hostStatsSet(name, value))
}

// checkStatName checks a counter name before the host sees it, so the error
// names the problem rather than only ErrInvalid.
func checkStatName(name string) error {
	if len(name) < 1 || len(name) > 64 {
		return fmt.Errorf("vitrine: statistic %q: want 1 to 64 characters: %w", name, ErrInvalid)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("vitrine: statistic %q: %q is not one of a-z A-Z 0-9 _ . -: %w", name, c, ErrInvalid)
		}
	}
	return nil
}
