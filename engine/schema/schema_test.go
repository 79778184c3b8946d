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

// TestRunOn: a value that took in a parameter written without "=" says
// where its own text ended and what to write.
func TestRunOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, want string }{
		{"100", ""},
		{"abc", ""},
		{"100,height", `; the value ran on past ",height", which has no "=": write height=<value>, or leave it out`},
		{"100,height,crop", `; the value ran on past ",height,crop", which has no "=": write height=<value>, or leave it out`},
		{"100,200", `; the value ran on past ",200": parameters are name=value, separated by commas`},
		{"100,", `; the value ran on past ",": parameters are name=value, separated by commas`},
	} {
		if got := RunOn(tc.raw); got != tc.want {
			t.Errorf("RunOn(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
