package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// sharpen is ImageMagick 6's unsharpMaskImage(radius, sigma, gain,
// threshold), which Imbo calls: each of R, G and B is blurred on its own
// with ImageMagick's blur kernel (below), and wherever twice the difference
// between the original and the blur reaches threshold x the range, gain x
// that difference is added to the original. Alpha is left alone.
type sharpen struct {
	radius, sigma, gain, threshold float64
}

func init() {
	register("sharpen", describe(parseSharpen, "Sharpens the image with an unsharp mask.",
		enumParam("preset", []string{"light", "moderate", "strong", "extreme"}, "Gain and threshold preset.").def("light"),
		numParam("radius", 0, 100, "Radius in pixels.").def(2),
		numParam("sigma", 0, 100, "Standard deviation.").def(1),
		numParam("gain", 0, 100, "Gain; default from the preset."),
		numParam("threshold", 0, 1, "Threshold, 0 to 1; default from the preset."),
	))
}

// sharpenPresets are Imbo's (gain, threshold) pairs; radius 2 and
// sigma 1 are common to all.
var sharpenPresets = map[string][2]float64{
	"light":    {1, 0.05},
	"moderate": {2, 0.05},
	"strong":   {3, 0.025},
	"extreme":  {4, 0},
}

func parseSharpen(p *Params) (Step, error) {
	preset := p.Enum("preset")
	gt := sharpenPresets[preset]
	sh := sharpen{
		radius:    p.Float("radius"),
		sigma:     p.Float("sigma"),
		gain:      gt[0],
		threshold: gt[1],
	}
	// gain and threshold have no declared default: theirs is the preset's.
	if p.Has("gain") {
		sh.gain = p.Float("gain")
	}
	if p.Has("threshold") {
		sh.threshold = p.Float("threshold")
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return sh, nil
}

func (sh sharpen) Apply(s *State) error {
	kernel := unsharpKernel(sh.radius, sh.sigma)
	if len(kernel) == 1 || sh.gain == 0 {
		return nil // no blur or no gain: nothing to add back
	}
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	alpha, err := detachAlpha(s.Image)
	if err == nil {
		err = sh.mask(s.Image, kernel)
	}
	if err != nil {
		if alpha != nil {
			alpha.Close()
		}
		return fmt.Errorf("sharpen: %w", err)
	}
	return reattachAlpha(s.Image, alpha)
}

// mask sharpens the 8-bit colour bands of img in place.
func (sh sharpen) mask(img *vips.ImageRef, kernel []float64) error {
	blurred, err := img.Copy()
	if err != nil {
		return err
	}
	defer blurred.Close()
	n := len(kernel)
	// gate becomes 1 where 2|orig-blurred| >= threshold x 255 and 0 where it
	// is below by more than 1/40000 of a level: an 8-bit cast clips the
	// steep ramp (govips exports no relational operation).
	const steep = 1e4
	var gate, diff *vips.ImageRef
	steps := []func() error{
		func() error { return blurred.Cast(vips.BandFormatFloat) },
		func() error { return convolve(blurred, kernel, n, 1, 1, precisionFloat) },
		func() error { return convolve(blurred, kernel, 1, n, 1, precisionFloat) },
		func() error { diff, err = img.Copy(); return err },
		func() error { return diff.Cast(vips.BandFormatFloat) },
		func() error { return diff.Subtract(blurred) },
		func() error { gate, err = diff.Copy(); return err },
		func() error { return gate.Abs() },
		func() error { return gate.Linear1(2*steep, 255-sh.threshold*255*steep) },
		func() error { return gate.Cast(vips.BandFormatUchar) },
		func() error { return gate.Linear1(sh.gain/255, 0) },
		func() error { return diff.Multiply(gate) },
		func() error { return img.Add(diff) },
		func() error { return img.Linear1(1, 0.5) }, // the cast truncates
		func() error { return img.Cast(vips.BandFormatUchar) },
	}
	defer func() {
		for _, r := range []*vips.ImageRef{gate, diff} {
			if r != nil {
				r.Close()
			}
		}
	}()
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// unsharpKernel is ImageMagick 6's one-dimensional blur kernel (the
// "blur:radius x sigma" kernel of morphology.c), normalised: 2 x
// floor(radius) + 1 taps for a radius of 1 or more, otherwise the width
// that sigma needs; each tap sums the gaussian at three sub-positions. A
// sigma of 0 is the one-tap identity.
func unsharpKernel(radius, sigma float64) []float64 {
	width := 0
	switch {
	case radius >= 1:
		width = int(radius)*2 + 1
	case radius > 0:
		width = 3 // 2 x ceil(radius) + 1
	default:
		width = optimalKernelWidth(sigma)
	}
	if sigma <= 1e-12 {
		return []float64{1}
	}
	const rank = 3
	k := make([]float64, width)
	v := (width*rank - 1) / 2
	s := sigma * rank
	var sum float64
	for u := -v; u <= v; u++ {
		w := math.Exp(-float64(u*u) / (2 * s * s))
		k[(u+v)/rank] += w
		sum += w
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// optimalKernelWidth is ImageMagick's GetOptimalKernelWidth1D for radius 0:
// the widest odd kernel whose edge tap is still at least 1/65535 of the
// total.
func optimalKernelWidth(sigma float64) int {
	if sigma <= 1e-12 {
		return 3
	}
	width := 5
	for ; width < 1000; width += 2 {
		j := (width - 1) / 2
		var norm float64
		for i := -j; i <= j; i++ {
			norm += math.Exp(-float64(i*i) / (2 * sigma * sigma))
		}
		if math.Exp(-float64(j*j)/(2*sigma*sigma))/norm < 1.0/65535 {
			break
		}
	}
	return width - 2
}

var _ Step = sharpen{}
