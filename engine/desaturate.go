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
	var sc scratch
	defer sc.close()
	bands, err := sc.floatBands(rgb)
	if err != nil {
		return nil, err
	}
	hi, err := sc.extreme(bands, 1)
	if err != nil {
		return nil, err
	}
	lo, err := sc.extreme(bands, -1)
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

// scratch holds the intermediate images of hslLightness, closed together.
type scratch []*vips.ImageRef

func (sc *scratch) keep(r *vips.ImageRef) *vips.ImageRef { *sc = append(*sc, r); return r }

func (sc *scratch) close() {
	for _, r := range *sc {
		r.Close()
	}
}

// floatBands splits a three-band image into float bands.
func (sc *scratch) floatBands(rgb *vips.ImageRef) ([3]*vips.ImageRef, error) {
	var bands [3]*vips.ImageRef
	for i := range bands {
		b, err := rgb.ExtractBandToImage(i, 1)
		if err != nil {
			return bands, err
		}
		bands[i] = sc.keep(b)
		if err := b.Cast(vips.BandFormatFloat); err != nil {
			return bands, err
		}
	}
	return bands, nil
}

// extreme returns the per-pixel max of the bands for sign 1, min for -1.
func (sc *scratch) extreme(bands [3]*vips.ImageRef, sign float64) (*vips.ImageRef, error) {
	ab, err := sc.pair(bands[0], bands[1], sign)
	if err != nil {
		return nil, err
	}
	return sc.pair(ab, bands[2], sign)
}

// pair returns (a+b)/2 + sign*|a-b|/2: the max for sign 1, min for -1.
func (sc *scratch) pair(a, b *vips.ImageRef, sign float64) (*vips.ImageRef, error) {
	sum, err := a.Copy()
	if err != nil {
		return nil, err
	}
	sc.keep(sum)
	diff, err := a.Copy()
	if err != nil {
		return nil, err
	}
	sc.keep(diff)
	for _, op := range []func() error{
		func() error { return sum.Add(b) },
		func() error { return diff.Subtract(b) },
		diff.Abs,
		func() error { return diff.Linear1(sign, 0) },
		func() error { return sum.Add(diff) },
		func() error { return sum.Linear1(0.5, 0) },
	} {
		if err := op(); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

var _ Step = desaturate{}
