package vitrine

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckStatName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"uploads", "bytes.total", "a-b_c.D9", strings.Repeat("x", 64)} {
		if err := checkStatName(ok); err != nil {
			t.Errorf("checkStatName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 65), "with space", "é", "a/b", "a:b"} {
		if err := checkStatName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("checkStatName(%q) = %v, want ErrInvalid", bad, err)
		}
		// The check runs before the host is asked: the error is ErrInvalid
		// even without a host.
		if err := StatsAdd(bad, 1); !errors.Is(err, ErrInvalid) {
			t.Errorf("StatsAdd(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestStatsSetEncodes(t *testing.T) {
	t.Parallel()
	if err := StatsSet("x", func() {}); !errors.Is(err, ErrInvalid) {
		t.Errorf("StatsSet(func) = %v, want ErrInvalid", err)
	}
	if err := SetMetadata(make(chan int)); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetMetadata(chan) = %v, want ErrInvalid", err)
	}
}
