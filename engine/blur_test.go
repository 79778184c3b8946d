package engine

import (
	"image"
	"math/rand/v2"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestMotionU8MatchesConvolution: the direct 8-bit motion blur gives the
// same pixels as the libvips convolution it replaces (run on a float copy
// of the image, which takes that path), within rounding, at angles in
// every quadrant and along the axes, on noise (the hardest case). The
// weights in 256ths move a pixel by about half a level on average.
func TestMotionU8MatchesConvolution(t *testing.T) {
	t.Parallel()
	const w, h = 97, 61
	r := rand.New(rand.NewPCG(7, 7))
	noise := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range noise.Pix {
		noise.Pix[i] = byte(r.UintN(256))
		if i%4 == 3 {
			noise.Pix[i] = 255
		}
	}
	load := func() *vips.ImageRef {
		img, err := vips.NewImageFromGoImage(noise)
		if err != nil {
			t.Fatal(err)
		}
		if err := img.ExtractBand(0, 3); err != nil {
			t.Fatal(err)
		}
		return img
	}
	for _, angle := range []float64{0, 30, 90, 135, 200, 300, -45} {
		for _, rs := range [][2]float64{{10, 5}, {3, 2}, {40, 30}} {
			b := blur{kind: "motion", radius: rs[0], sigma: rs[1], angle: angle}
			fast := &State{Image: load()}
			slow := &State{Image: load()}
			if err := slow.Image.Cast(vips.BandFormatFloat); err != nil {
				t.Fatal(err)
			}
			if err := b.motion(fast); err != nil {
				t.Fatal(err)
			}
			if err := b.motion(slow); err != nil {
				t.Fatal(err)
			}
			if err := castTo(slow.Image, vips.BandFormatUchar); err != nil {
				t.Fatal(err)
			}
			a, err := fast.Image.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			c, err := slow.Image.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(c) || fast.Image.Width() != w || fast.Image.Height() != h {
				t.Fatalf("angle %v: %dx%d, %d vs %d bytes", angle, fast.Image.Width(), fast.Image.Height(), len(a), len(c))
			}
			worst, sum := 0, 0
			for i := range a {
				d := int(a[i]) - int(c[i])
				if d < 0 {
					d = -d
				}
				worst = max(worst, d)
				sum += d
			}
			if mean := float64(sum) / float64(len(a)); worst > 4 || mean > 1 {
				t.Errorf("angle %v radius %v sigma %v: differs by up to %d (mean %.2f)", angle, rs[0], rs[1], worst, mean)
			}
			fast.Image.Close()
			slow.Image.Close()
		}
	}
}
