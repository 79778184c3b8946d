package main

import (
	"maps"
	"testing"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func TestCounts(t *testing.T) {
	t.Parallel()
	c := classes{MediumMP: 1, LargeMP: 12}
	cases := []struct {
		w, h  int
		class string
	}{
		{640, 480, "small"},
		{999, 1000, "small"},
		{1000, 1000, "medium"},
		{3999, 3000, "medium"},
		{4000, 3000, "large"},
	}
	for _, tc := range cases {
		t.Run(tc.class, func(t *testing.T) {
			t.Parallel()
			got := counts(vitrine.ImageInfo{Width: tc.w, Height: tc.h, Size: 4321}, c)
			want := map[string]int64{"uploads": 1, "bytes": 4321, tc.class: 1}
			if !maps.Equal(got, want) {
				t.Errorf("counts(%dx%d) = %v, want %v", tc.w, tc.h, got, want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	got := describe(classes{MediumMP: 0.5, LargeMP: 20})
	want := map[string]string{
		"small":  "under 0.5 MP",
		"medium": "0.5 to 20 MP",
		"large":  "20 MP and more",
	}
	if !maps.Equal(got, want) {
		t.Errorf("describe = %v, want %v", got, want)
	}
}
