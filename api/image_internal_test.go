package api

import "testing"

// TestSameArray: a result that is (part of) the source is recognised, so
// the source buffer is not reused under it.
func TestSameArray(t *testing.T) {
	t.Parallel()
	src := make([]byte, 10, 16)
	other := make([]byte, 10)
	for _, c := range []struct {
		name string
		a, b []byte
		want bool
	}{
		{"itself", src, src, true},
		{"a prefix", src[:3], src, true},
		{"a middle part", src[4:6], src, true},
		{"another array", other, src, false},
		{"empty", nil, src, false},
	} {
		if got := sameArray(c.a, c.b); got != c.want {
			t.Errorf("%s: sameArray = %v, want %v", c.name, got, c.want)
		}
	}
}
