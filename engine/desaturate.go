package engine

import (
	"fmt"

	"github.com/davidbyttow/govips/v2/vips"
)

// desaturate sets the HSL saturation to 0 (ImageMagick modulate 100,0,100):
// every pixel becomes the grey (max(R,G,B)+min(R,G,B))/2, its HSL lightness,
// not its luminance. Alpha is kept; the result stays sRGB.
type desaturate struct{}

func init() {
	register("desaturate", describe(parseDesaturate, "Removes all colour: every pixel becomes its HSL lightness."))
}

func parseDesaturate(p *Params) (Step, error) {
	if err := p.Err(); err != nil {
		return nil, err
	}
	return desaturate{}, nil
}

func (desaturate) Apply(s *State) error {
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	alpha, err := detachAlpha(s.Image)
	if err != nil {
		return err
	}
	grey, err := hslLightness(s.Image)
	if err != nil {
		if alpha != nil {
			alpha.Close()
		}
		return fmt.Errorf("desaturate: %w", err)
	}
	swapImage(s, grey)
	if err := grey.ToColorSpace(vips.InterpretationSRGB); err != nil {
		if alpha != nil {
			alpha.Close()
		}
		return fmt.Errorf("desaturate: %w", err)
	}
	return reattachAlpha(grey, alpha)
}

// hslLightness returns the 8-bit B_W image (max+min)/2 of a three-band image.
// libvips has no per-pixel band max/min in govips, so they are composed from
// max(a,b) = (a+b+|a-b|)/2 and min(a,b) = (a+b-|a-b|)/2.
func hslLightness(rgb *vips.ImageRef) (*vips.ImageRef, error) {
	var bands [3]*vips.ImageRef
	var all []*vips.ImageRef
	defer func() {
		for _, b := range all {
			b.Close()
		}
	}()
	keep := func(r *vips.ImageRef) *vips.ImageRef { all = append(all, r); return r }
	for i := range bands {
		b, err := rgb.ExtractBandToImage(i, 1)
		if err != nil {
			return nil, err
		}
		if err := b.Cast(vips.BandFormatFloat); err != nil {
			b.Close()
			return nil, err
		}
		bands[i] = keep(b)
	}
	// pair returns (a+b)/2 + sign*|a-b|/2: the max for sign 1, min for -1.
	pair := func(a, b *vips.ImageRef, sign float64) (*vips.ImageRef, error) {
		sum, err := a.Copy()
		if err != nil {
			return nil, err
		}
		keep(sum)
		diff, err := a.Copy()
		if err != nil {
			return nil, err
		}
		keep(diff)
		if err := sum.Add(b); err != nil {
			return nil, err
		}
		if err := diff.Subtract(b); err != nil {
			return nil, err
		}
		if err := diff.Abs(); err != nil {
			return nil, err
		}
		if err := diff.Linear1(sign, 0); err != nil {
			return nil, err
		}
		if err := sum.Add(diff); err != nil {
			return nil, err
		}
		if err := sum.Linear1(0.5, 0); err != nil {
			return nil, err
		}
		return sum, nil
	}
	max1, err := pair(bands[0], bands[1], 1)
	if err != nil {
		return nil, err
	}
	hi, err := pair(max1, bands[2], 1)
	if err != nil {
		return nil, err
	}
	min1, err := pair(bands[0], bands[1], -1)
	if err != nil {
		return nil, err
	}
	lo, err := pair(min1, bands[2], -1)
	if err != nil {
		return nil, err
	}
	out, err := hi.Copy()
	if err != nil {
		return nil, err
	}
	// (hi+lo)/2, +0.5 so that the truncating cast rounds (#ff0000 -> #808080).
	if err = out.Add(lo); err == nil {
		err = out.Linear1(0.5, 0.5)
	}
	if err == nil {
		err = out.Cast(vips.BandFormatUchar)
	}
	if err != nil {
		out.Close()
		return nil, err
	}
	grey, err := out.CopyChangingInterpretation(vips.InterpretationBW)
	out.Close()
	return grey, err
}

var _ Step = desaturate{}
