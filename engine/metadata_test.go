package engine

import (
	"bytes"
	"image/color"
	"os"
	"path/filepath"
	"testing"
)

// leaks returns the planted metadata strings found in data.
func leaks(data []byte) []string {
	var found []string
	for _, s := range []string{fixtureMake, fixtureModel, fixtureXMP, fixtureIPTC, "Exif\x00\x00", "Adobe RGB"} {
		if bytes.Contains(data, []byte(s)) {
			found = append(found, s)
		}
	}
	return found
}

// Adobe RGB (200, 60, 60) is sRGB (231.5, 57.4, 57.5): the D50 colorant
// matrices of both spaces composed, with each space's transfer curve. An
// output that dropped the profile without converting would stay (200, 60, 60).
var adobeRedInSRGB = color.NRGBA{231, 57, 57, 255}

func TestOutputsCarryNoMetadata(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := privacyFixture(t)
	chains := [][]string{
		nil, // conversion only
		{"thumbnail:width=20,height=20"},
		{"resize:width=32"},
		{"crop:width=30,height=20,x=5,y=5"},
		{"border:width=2,height=2,color=fff"},
		{"rotate:angle=90"},
		{"flipHorizontally"},
		{"compress:level=90"},
		{"strip"},
	}
	for _, format := range []string{"jpg", "png", "webp", "gif", "avif", "tif"} {
		for _, chain := range chains {
			if chain == nil && format == "jpg" {
				continue // the original itself
			}
			name := format
			if len(chain) > 0 {
				name += "/" + chain[0]
			}
			t.Run(name, func(t *testing.T) {
				res := run(t, e, src, format, Env{}, chain...)
				if l := leaks(res.Data); len(l) > 0 {
					t.Errorf("output carries %q", l)
				}
				ref := mustLoad(t, res.Data)
				defer ref.Close()
				if ref.HasExif() || ref.HasIPTC() || ref.HasICCProfile() {
					t.Errorf("output has exif %v, iptc %v, icc %v", ref.HasExif(), ref.HasIPTC(), ref.HasICCProfile())
				}
				tol := 4
				if format == "gif" {
					tol = 12 // a palette
				}
				if got := pixel(t, res.Data, res.Width/2, res.Height/2); !near(got, adobeRedInSRGB, tol) {
					t.Errorf("centre %v, want sRGB %v", got, adobeRedInSRGB)
				}
			})
		}
	}
}

func TestKeepMetadata(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Output: OutputPolicy{KeepMetadata: true}})
	src := privacyFixture(t)
	res := run(t, e, src, "jpg", Env{}, "resize:width=32")
	if !bytes.Contains(res.Data, []byte(fixtureMake)) || !bytes.Contains(res.Data, []byte(fixtureXMP)) {
		t.Error("keepMetadata: camera make or XMP lost")
	}
	ref := mustLoad(t, res.Data)
	profile := ref.GetICCProfile()
	ref.Close()
	if desc, _ := iccDescription(profile); !iccIsSRGB(profile) {
		t.Errorf("keepMetadata: profile %q, want the sRGB the pixels were converted to", desc)
	}
	if got := pixel(t, res.Data, 16, 12); !near(got, adobeRedInSRGB, 4) {
		t.Errorf("keepMetadata: centre %v, want sRGB %v", got, adobeRedInSRGB)
	}
	stripped := run(t, e, src, "jpg", Env{}, "resize:width=32", "strip")
	if l := leaks(stripped.Data); len(l) > 0 {
		t.Errorf("keepMetadata with strip: output carries %q", l)
	}
}

func TestOrientationBakedBeforeStripping(t *testing.T) {
	t.Parallel()
	// A 200x100 picture stored with EXIF orientation 6: viewers show it
	// rotated 90 degrees clockwise, 100x200 with the red block top-right.
	src := withSegments(t, source(t, 200, 100, "jpg", false), append([]byte{0xFF, 0xE1}, exifAPP1(6)...))
	cases := []struct {
		name       string
		cfg        Config
		chain      []string
		w, h       int
		redX, redY int // inside the red block in the output
	}{
		{"default rotates the result", Config{}, []string{"resize:width=100"}, 50, 100, 44, 8},
		{"strip rotates", Config{Output: OutputPolicy{KeepMetadata: true}}, []string{"resize:width=100", "strip"}, 50, 100, 44, 8},
		{"keepMetadata keeps the tag", Config{Output: OutputPolicy{KeepMetadata: true}}, []string{"resize:width=100"}, 100, 50, 8, 4},
		{"autoRotate is not applied twice", Config{}, []string{"autoRotate", "resize:width=50"}, 50, 100, 44, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEngine(t, c.cfg)
			res := run(t, e, src, "png", Env{}, c.chain...)
			if res.Width != c.w || res.Height != c.h {
				t.Fatalf("size %dx%d, want %dx%d", res.Width, res.Height, c.w, c.h)
			}
			if got := pixel(t, res.Data, c.redX, c.redY); !near(got, color.NRGBA{230, 20, 20, 255}, 16) {
				t.Errorf("red block not at (%d, %d): %v", c.redX, c.redY, got)
			}
		})
	}
}

func TestICCStepKeepsItsProfile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p3.icc")
	if err := os.WriteFile(path, iccProfile(displayP3), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Config{ICCProfiles: map[string]string{"p3": path}})
	src := privacyFixture(t)
	for _, c := range []struct {
		chain   []string
		profile string
	}{
		{[]string{"icc:profile=p3"}, displayP3.name},
		{[]string{"icc:profile=p3", "strip"}, ""},
	} {
		res := run(t, e, src, "png", Env{}, c.chain...)
		if l := leaks(res.Data); len(l) > 0 {
			t.Errorf("%v: output carries %q", c.chain, l)
		}
		ref := mustLoad(t, res.Data)
		desc, _ := iccDescription(ref.GetICCProfile())
		ref.Close()
		if desc != c.profile {
			t.Errorf("%v: profile %q, want %q", c.chain, desc, c.profile)
		}
	}
}
