package web

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/vitrine/vitrine/api"
)

// TestDifferences: two versions differ by their manifests' leaves, by
// dotted path (arrays by index), a field only one has shown against "-",
// and then by the bundle's size and uploader; equal fields are left out.
func TestDifferences(t *testing.T) {
	const at = "2026-11-27T03:00:00Z"
	a := api.FilterVersion{Version: "a", Size: 2048, Created: at, Actor: "alice", Manifest: json.RawMessage(`{
		"name": "duotone", "version": "1.0.0",
		"params": {"dark": {"type": "color", "default": "000000"}},
		"limits": {"timeoutMs": 1000},
		"events": ["images.post", "images.put"]}`)}
	b := api.FilterVersion{Version: "b", Size: 2048, Created: at, Actor: "bob", Manifest: json.RawMessage(`{
		"name": "duotone", "version": "1.1.0",
		"params": {"dark": {"type": "color", "default": "202020"}, "light": {"type": "color"}},
		"limits": {"timeoutMs": 1000, "instances": 2},
		"events": ["images.post"]}`)}
	var got []string
	for _, d := range differences(a, b) {
		got = append(got, d.Field+" | "+d.A+" | "+d.B)
	}
	want := []string{
		`events.1 | "images.put" | -`,
		`limits.instances | - | 2`,
		`params.dark.default | "000000" | "202020"`,
		`params.light.type | - | "color"`,
		`version | "1.0.0" | "1.1.0"`,
		`uploaded by | alice | bob`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("differences:\n%q\nwant\n%q", got, want)
	}
	if d := differences(a, a); len(d) != 0 {
		t.Fatalf("a version against itself: %q", d)
	}
}

// TestRunningValue: an instance's line for a filter names the version of
// its current files and their state there, and why when they are
// unavailable or failed there.
func TestRunningValue(t *testing.T) {
	v := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		f    api.FilterRunning
		want string
	}{
		{api.FilterRunning{Source: "dir", State: "ready"}, "dir ready"},
		{api.FilterRunning{Source: "api", Version: v, Target: v, State: "ready"}, short(v) + " ready"},
		{api.FilterRunning{Source: "api", Target: v, State: "unavailable", Error: `asks for capability "clock"`},
			short(v) + ` unavailable: asks for capability "clock"`},
	} {
		if got := runningValue(c.f); got != c.want {
			t.Errorf("runningValue(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
}
