package schema

import "testing"

// TestMatchEvent pins the event patterns: a name, resource.*, *.method and
// *; nothing else is a wildcard.
func TestMatchEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"image.get", "image.get", true},
		{"image.get", "image.head", false},
		{"image.*", "image.get", true},
		{"image.*", "images.get", false},
		{"*.get", "images.get", true},
		{"*.get", "images.getx", false},
		{"*.post", "images.post", true},
		{"*", "stats.get", true},
		{"*", "", true},
		{"image*", "image.get", false},
		{"*.*", "image.get", false},
		{"", "image.get", false},
		{"image.get", "", false},
	} {
		t.Run(tc.pattern+"|"+tc.name, func(t *testing.T) {
			if got := MatchEvent(tc.pattern, tc.name); got != tc.want {
				t.Errorf("MatchEvent(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
			}
		})
	}
}
