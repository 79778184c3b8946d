package vitrine

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRejectStatus(t *testing.T) {
	t.Parallel()
	for _, s := range []int{0, 200, 302, 399, 500, 503} {
		if err := Reject(s, "no"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Reject(%d) = %v, want ErrInvalid", s, err)
		}
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 600) // 1200 bytes, two per rune
	cases := []struct {
		name string
		in   string
		want int
	}{
		{"short", "too small", 9},
		{"exact", strings.Repeat("a", 1024), 1024},
		{"ascii", strings.Repeat("a", 2000), 1024},
		{"rune boundary", "a" + long, 1023},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := cut(c.in, maxRejectMessage)
			if len(got) != c.want || !utf8.ValidString(got) || !strings.HasPrefix(c.in, got) {
				t.Errorf("cut: %d bytes (valid UTF-8: %v), want %d", len(got), utf8.ValidString(got), c.want)
			}
		})
	}
}

func TestRejectionIsAnError(t *testing.T) {
	t.Parallel()
	var err error = &Rejection{Status: 413, Message: "too big"}
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Status != 413 || !strings.Contains(err.Error(), "too big") {
		t.Errorf("Rejection %v does not carry its status and message", err)
	}
}
