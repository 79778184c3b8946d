package api

import (
	"slices"
	"testing"
)

// TestUploadSteps: an upload's steps run in this order (uploadchecks.go);
// a step lost, added or moved, which changes which refusal an upload
// meets first, fails here.
func TestUploadSteps(t *testing.T) {
	want := []string{"erasing", "read", "checksum blocklist", "stored", "quota", "analysis",
		"perceptual blocklist", "near-duplicate"}
	var got []string
	for _, step := range uploadSteps {
		if step.run == nil {
			t.Errorf("step %q has no function", step.name)
		}
		got = append(got, step.name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("upload steps %q, want %q", got, want)
	}
}
