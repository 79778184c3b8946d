package vitrine

import (
	"errors"
	"strings"
	"testing"
)

func TestCodeError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code int32
		want error
	}{
		{-1, ErrNotFound},
		{-2, ErrFault},
		{-3, ErrInvalid},
		{-4, ErrUnavailable},
		{-5, ErrLimit},
		{codeNoHost, ErrNoHost},
	}
	for _, c := range cases {
		t.Run(c.want.Error(), func(t *testing.T) {
			t.Parallel()
			err := codeError("param_get", c.code)
			if !errors.Is(err, c.want) {
				t.Fatalf("codeError(%d) = %v, want it to match %v", c.code, err, c.want)
			}
			if !strings.Contains(err.Error(), "param_get") {
				t.Errorf("%q does not name the host function", err)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		err := codeError("log", -42)
		for _, s := range []error{ErrNotFound, ErrFault, ErrInvalid, ErrUnavailable, ErrLimit, ErrNoHost} {
			if errors.Is(err, s) {
				t.Errorf("code -42 matches %v", s)
			}
		}
		if !strings.Contains(err.Error(), "-42") {
			t.Errorf("%q does not give the code", err)
		}
	})
}

func TestStatus(t *testing.T) {
	t.Parallel()
	if err := status("stats_add", 0); err != nil {
		t.Errorf("status(0) = %v", err)
	}
	if err := status("stats_add", -4); !errors.Is(err, ErrUnavailable) {
		t.Errorf("status(-4) = %v, want ErrUnavailable", err)
	}
}

// Without a host, every host call answers ErrNoHost rather than pretending.
func TestNoHost(t *testing.T) {
	t.Parallel()
	var v any
	calls := map[string]error{
		"Settings":    Settings(&v),
		"Metadata":    Metadata(&v),
		"SetMetadata": SetMetadata(map[string]any{"a": 1}),
		"SetBody":     SetBody([]byte("x")),
		"StatsAdd":    StatsAdd("uploads", 1),
		"StatsSet":    StatsSet("uploads", 1),
		"Reject":      Reject(400, "no"),
	}
	_, calls["Body"] = Body()
	_, calls["hostParams"] = hostParams().String("x")
	_, calls["readPixels"] = readPixels()
	for name, err := range calls {
		if !errors.Is(err, ErrNoHost) {
			t.Errorf("%s = %v, want ErrNoHost", name, err)
		}
	}
}
