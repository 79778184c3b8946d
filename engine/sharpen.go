package engine

import (
	"fmt"

	"github.com/davidbyttow/govips/v2/vips"
)

// sharpen is an unsharp mask. The reference calls ImageMagick's
// unsharpMaskImage(radius, sigma, gain, threshold); here it is libvips
// sharpen, which works on the L channel of LabS with a piecewise curve, so
// the parameters are mapped:
//   - sigma -> sigma of the gaussian (the kernel size follows from it, so
//     radius is validated but only used when sigma is 0: sigma = radius/2);
//   - gain -> m2, the slope applied to differences above the threshold;
//   - threshold (a fraction of the range) -> x1 = threshold x 100 L units,
//     below which nothing changes (m1 = 0), as in ImageMagick.
//
// libvips also caps the brightening and darkening (its y2/y3 defaults), which
// avoids the haloes an uncapped unsharp mask makes at high gain.
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
	sigma := sh.sigma
	if sigma == 0 {
		sigma = sh.radius / 2
	}
	if sigma == 0 || sh.gain == 0 {
		return nil // no blur or no gain: nothing to add back
	}
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	if err := s.Image.Sharpen(sigma, sh.threshold*100, sh.gain); err != nil {
		return fmt.Errorf("sharpen: %w", err)
	}
	if s.Image.BandFormat() != vips.BandFormatUchar {
		return s.Image.Cast(vips.BandFormatUchar)
	}
	return nil
}

var _ Step = sharpen{}
