package engine

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// cmykJPEG is an sRGB colour converted to CMYK with libvips' CMYK profile and
// written as a CMYK JPEG, with the profile embedded or not.
func cmykJPEG(t *testing.T, c color.NRGBA, embed bool) []byte {
	t.Helper()
	return cmykJPEGOf(t, fxSolid(32, 24, c), embed)
}

// cmykJPEGOf is img converted to CMYK as cmykJPEG converts its colour.
func cmykJPEGOf(t *testing.T, img image.Image, embed bool) []byte {
	t.Helper()
	ref, err := vips.NewImageFromGoImage(img)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if err := ref.ExtractBand(0, 3); err != nil {
		t.Fatal(err)
	}
	if err := ref.TransformICCProfileWithFallback("cmyk", "srgb"); err != nil {
		t.Fatal(err)
	}
	if ref.Interpretation() != vips.InterpretationCMYK || ref.Bands() != 4 {
		t.Fatalf("not CMYK: %v, %d bands", ref.Interpretation(), ref.Bands())
	}
	if !embed {
		if err := ref.RemoveICCProfile(); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := ref.ExportJpeg(&vips.JpegExportParams{Quality: 95})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestColourManagement renders inputs whose numbers mean different colours
// and compares the output pixels with the sRGB values they stand for.
func TestColourManagement(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	red := color.NRGBA{200, 60, 60, 255}
	grey16 := func() []byte {
		img := image.NewNRGBA64(image.Rect(0, 0, 32, 24))
		for y := 0; y < 24; y++ {
			for x := 0; x < 32; x++ {
				// 16-bit values whose high bytes are 200, 60, 60: the low
				// bytes must not turn into noise or wrap.
				img.SetNRGBA64(x, y, color.NRGBA64{R: 200<<8 | 0xC0, G: 60<<8 | 0x20, B: 60<<8 | 0xF0, A: 0xFFFF})
			}
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	greyAlpha := func() []byte {
		ref, err := vips.NewImageFromGoImage(fxSolid(32, 24, color.NRGBA{150, 150, 150, 128}))
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		if err := ref.ToColorSpace(vips.InterpretationBW); err != nil {
			t.Fatal(err)
		}
		if ref.Bands() != 2 {
			t.Fatalf("grey+alpha has %d bands", ref.Bands())
		}
		out, _, err := ref.ExportPng(vips.NewPngExportParams())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name   string
		src    []byte
		chain  []string
		format string
		want   color.NRGBA
		tol    int
	}{
		// Adobe RGB (200, 60, 60) is sRGB (231.5, 57.4, 57.5).
		{"Adobe RGB JPEG", privateJPEG(t, 32, 24, red, iccProfile(adobeRGB), 1), []string{"resize:width=16"}, "png", color.NRGBA{231, 57, 57, 255}, 4},
		// Display P3 (200, 60, 60) is sRGB (217.5, 41.7, 52.3).
		{"Display P3 JPEG", privateJPEG(t, 32, 24, red, iccProfile(displayP3), 1), []string{"resize:width=16"}, "png", color.NRGBA{217, 42, 52, 255}, 4},
		{"Display P3 to WebP", privateJPEG(t, 32, 24, red, iccProfile(displayP3), 1), nil, "webp", color.NRGBA{217, 42, 52, 255}, 5},
		// sRGB to CMYK and back through the same profile: the colour
		// returns (the profile is a LUT: a few levels of error).
		{"CMYK JPEG with profile", cmykJPEG(t, red, true), []string{"resize:width=16"}, "png", red, 8},
		{"CMYK JPEG without profile", cmykJPEG(t, red, false), []string{"resize:width=16"}, "jpg", red, 8},
		{"16-bit PNG", grey16(), []string{"resize:width=16"}, "png", red, 1},
		{"16-bit PNG to JPEG", grey16(), []string{"resize:width=16"}, "jpg", red, 3},
		{"16-bit PNG through modulate", grey16(), []string{"modulate:b=100,s=100,h=300"}, "png", red, 1},
		{"grey+alpha PNG", greyAlpha(), []string{"resize:width=16"}, "png", color.NRGBA{150, 150, 150, 128}, 1},
		{"grey+alpha to WebP", greyAlpha(), []string{"resize:width=16"}, "webp", color.NRGBA{150, 150, 150, 128}, 3},
		// JPEG flattens alpha onto white: 150 * 128/255 + 255 * 127/255.
		{"grey+alpha to JPEG", greyAlpha(), []string{"resize:width=16"}, "jpg", color.NRGBA{202, 202, 202, 255}, 3},
		{"grey+alpha through blur", greyAlpha(), []string{"blur:radius=2,sigma=1"}, "png", color.NRGBA{150, 150, 150, 128}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, e, c.src, c.format, Env{}, c.chain...)
			if got := pixel(t, res.Data, res.Width/2, res.Height/2); !near(got, c.want, c.tol) {
				t.Errorf("centre %v, want %v (±%d)", got, c.want, c.tol)
			}
		})
	}
}

func TestICCDescription(t *testing.T) {
	for _, c := range []struct {
		profile []byte
		desc    string
		srgb    bool
	}{
		{iccProfile(adobeRGB), adobeRGB.name, false},
		{iccProfile(rgbSpace{name: "sRGB IEC61966-2.1"}), "sRGB IEC61966-2.1", true},
		{nil, "", false},
		{[]byte("short"), "", false},
	} {
		desc, _ := iccDescription(c.profile)
		if desc != c.desc || iccIsSRGB(c.profile) != c.srgb {
			t.Errorf("description %q (sRGB %v), want %q (%v)", desc, iccIsSRGB(c.profile), c.desc, c.srgb)
		}
	}
}
