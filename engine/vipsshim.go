package engine

import (
	"encoding/binary"
	"fmt"
	"image"

	"github.com/davidbyttow/govips/v2/vips"
)

// This file holds the libvips building blocks the effect transformations
// share, composed from govips' exported operations (XYZ, Linear, Gamma,
// Mapim, Maplut, Embed, ...), which keeps every pipeline lazy and avoids
// copying whole images through Go memory. What govips v2.18 does not export
// (custom convolution masks, polar maps, relational operations) goes
// through the cgo shim in vipscgo.go.

// toSRGB8 normalises img in place to 8-bit sRGB: three colour bands, plus an
// alpha band when it had one. Grey, 16-bit and CMYK inputs all end up here,
// so a step can reason about exactly one layout.
func toSRGB8(img *vips.ImageRef) error {
	if img.Interpretation() != vips.InterpretationSRGB || img.Bands() < 3 {
		if err := img.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return fmt.Errorf("to sRGB: %w", err)
		}
	}
	if img.BandFormat() != vips.BandFormatUchar {
		if err := img.Cast(vips.BandFormatUchar); err != nil {
			return fmt.Errorf("to 8 bit: %w", err)
		}
	}
	return nil
}

// detachAlpha removes the alpha band of an 8-bit sRGB image (see toSRGB8)
// and returns it, or nil when there is none.
func detachAlpha(img *vips.ImageRef) (*vips.ImageRef, error) {
	if img.Bands() != 4 {
		return nil, nil
	}
	alpha, err := img.ExtractBandToImage(3, 1)
	if err != nil {
		return nil, fmt.Errorf("extract alpha: %w", err)
	}
	if err := img.ExtractBand(0, 3); err != nil {
		alpha.Close()
		return nil, fmt.Errorf("extract colour: %w", err)
	}
	return alpha, nil
}

// reattachAlpha appends alpha (which may be nil) to img and closes it.
func reattachAlpha(img, alpha *vips.ImageRef) error {
	if alpha == nil {
		return nil
	}
	defer alpha.Close()
	if err := img.BandJoin(alpha); err != nil {
		return fmt.Errorf("join alpha: %w", err)
	}
	return nil
}

// mapColourBands applies one 256-entry table per colour band (R, G, B) to s.Image
// with libvips maplut, leaving alpha alone. The image becomes 8-bit sRGB.
func mapColourBands(img *vips.ImageRef, r, g, b *[256]uint8) error {
	if err := toSRGB8(img); err != nil {
		return err
	}
	alpha, err := detachAlpha(img)
	if err != nil {
		return err
	}
	lut, err := lutFromTables(r, g, b)
	if err != nil {
		if alpha != nil {
			alpha.Close()
		}
		return err
	}
	defer lut.Close()
	if err := img.Maplut(lut); err != nil {
		if alpha != nil {
			alpha.Close()
		}
		return fmt.Errorf("maplut: %w", err)
	}
	return reattachAlpha(img, alpha)
}

// lutFromTables builds a 256x1 8-bit lookup table image with one band per table
// (1 to 3 tables), for vips maplut.
func lutFromTables(tables ...*[256]uint8) (*vips.ImageRef, error) {
	rgba := image.NewNRGBA(image.Rect(0, 0, 256, 1))
	for i := 0; i < 256; i++ {
		for b, t := range tables {
			rgba.Pix[4*i+b] = t[i]
		}
		rgba.Pix[4*i+3] = 255
	}
	ref, err := vips.NewImageFromGoImage(rgba)
	if err != nil {
		return nil, fmt.Errorf("lut: %w", err)
	}
	if err := ref.ExtractBand(0, len(tables)); err != nil {
		ref.Close()
		return nil, fmt.Errorf("lut: %w", err)
	}
	return ref, nil
}

// channelHistogram returns the 256-bucket counts of each colour band of img (which
// is not changed), after normalising a copy to 8-bit sRGB.
func channelHistogram(img *vips.ImageRef) ([3][256]uint64, error) {
	var out [3][256]uint64
	c, err := img.Copy()
	if err != nil {
		return out, err
	}
	defer c.Close()
	if err := toSRGB8(c); err != nil {
		return out, err
	}
	if c.Bands() > 3 {
		if err := c.ExtractBand(0, 3); err != nil {
			return out, err
		}
	}
	if err := c.HistogramFind(); err != nil {
		return out, fmt.Errorf("histogram: %w", err)
	}
	raw, err := c.ToBytes()
	if err != nil {
		return out, fmt.Errorf("histogram: %w", err)
	}
	if len(raw) < 256*3*4 {
		return out, fmt.Errorf("histogram: %d bytes, want %d", len(raw), 256*3*4)
	}
	for i := 0; i < 256; i++ {
		for b := 0; b < 3; b++ {
			out[b][i] = uint64(binary.NativeEndian.Uint32(raw[4*(3*i+b):]))
		}
	}
	return out, nil
}

// swapImage makes next the state's image and closes the previous one.
func swapImage(s *State, next *vips.ImageRef) {
	if s.Image != next {
		s.Image.Close()
		s.Image = next
	}
}

// importNRGBA imports an NRGBA picture drawn in Go as an sRGB libvips image.
func importNRGBA(img *image.NRGBA) (*vips.ImageRef, error) {
	ref, err := vips.NewImageFromGoImage(img)
	if err != nil {
		return nil, fmt.Errorf("import importNRGBA: %w", err)
	}
	return ref, nil
}

// centredCoords returns two one-band float images of size w x h holding
// x - cx and y - cy for every pixel.
func centredCoords(w, h int, cx, cy float64) (dx, dy *vips.ImageRef, err error) {
	xyz, err := vips.XYZ(w, h)
	if err != nil {
		return nil, nil, fmt.Errorf("xyz: %w", err)
	}
	defer xyz.Close()
	dx, err = xyz.ExtractBandToImage(0, 1)
	if err != nil {
		return nil, nil, err
	}
	dy, err = xyz.ExtractBandToImage(1, 1)
	if err == nil {
		err = dx.Linear1(1, -cx)
	}
	if err == nil {
		err = dy.Linear1(1, -cy)
	}
	if err != nil {
		dx.Close()
		if dy != nil {
			dy.Close()
		}
		return nil, nil, fmt.Errorf("centredCoords: %w", err)
	}
	return dx, dy, nil
}
