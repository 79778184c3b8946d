package main

import (
	"image"
	"image/color"
	"testing"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func TestInvert(t *testing.T) {
	for _, c := range []struct {
		alpha string
		want  color.NRGBA
	}{{"false", color.NRGBA{255, 155, 0, 40}}, {"true", color.NRGBA{255, 155, 0, 215}}} {
		img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
		img.SetNRGBA(0, 0, color.NRGBA{0, 100, 255, 40})
		if _, err := transform(img, vitrine.NewParams(map[string]string{"alpha": c.alpha})); err != nil {
			t.Fatal(err)
		}
		if got := img.NRGBAAt(0, 0); got != c.want {
			t.Errorf("alpha=%s: got %v, want %v", c.alpha, got, c.want)
		}
	}
}
