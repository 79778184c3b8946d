package main

import (
	"slices"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/filters"
)

// TestEventListsAgree checks that the events guest manifests may name
// (package filters, documented in wasm-sdk/ABI.md) are exactly those the
// REST API fires: a listener must not be refused for an event that fires,
// nor accepted for one that never does.
func TestEventListsAgree(t *testing.T) {
	fired, listed := api.Events(), filters.EventNames()
	cases := []struct {
		what     string
		from, in []string
	}{
		{"fired by api but missing from filters.EventNames", fired, listed},
		{"listed by filters.EventNames but never fired by api", listed, fired},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			var missing []string
			for _, name := range c.from {
				if !slices.Contains(c.in, name) {
					missing = append(missing, name)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%v", missing)
			}
		})
	}
	if len(fired) == 0 {
		t.Fatal("api fires no event at all")
	}
}
