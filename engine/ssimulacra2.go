package engine

/*
#include "ssimulacra2.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/davidbyttow/govips/v2/vips"
)

// ssimulacra2 scores dist against ref, both w x h packed 8-bit sRGB (3
// bytes a pixel), by SSIMULACRA 2 (ssimulacra2.c): 100 is identical, 90 is
// visually lossless to most viewers, 70 a good web quality, 50 mediocre;
// strong distortions go below 0.
func ssimulacra2(ref, dist []byte, w, h int) (float64, error) {
	if w < 8 || h < 8 {
		return 0, fmt.Errorf("ssimulacra2: %dx%d is smaller than 8x8", w, h)
	}
	if len(ref) != 3*w*h || len(dist) != 3*w*h {
		return 0, errors.New("ssimulacra2: pixel buffers do not match the size")
	}
	var score C.double
	if C.vt_ssimulacra2((*C.uint8_t)(unsafe.Pointer(&ref[0])), (*C.uint8_t)(unsafe.Pointer(&dist[0])), C.int(w), C.int(h), &score) != 0 {
		return 0, errors.New("ssimulacra2: out of memory")
	}
	return float64(score), nil
}

// rgbPixels renders a copy of img as packed 8-bit sRGB: other colour
// spaces converted, alpha flattened on white (as a JPEG output would be).
func rgbPixels(img *vips.ImageRef) ([]byte, int, int, error) {
	c, err := img.Copy()
	if err != nil {
		return nil, 0, 0, err
	}
	defer c.Close()
	if c.Interpretation() != vips.InterpretationSRGB || c.BandFormat() != vips.BandFormatUchar {
		if err := c.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return nil, 0, 0, err
		}
	}
	if c.HasAlpha() {
		if err := c.Flatten(&vips.Color{R: 255, G: 255, B: 255}); err != nil {
			return nil, 0, 0, err
		}
	}
	if c.BandFormat() != vips.BandFormatUchar {
		if err := c.Cast(vips.BandFormatUchar); err != nil {
			return nil, 0, 0, err
		}
	}
	if c.Bands() > 3 {
		if err := c.ExtractBand(0, 3); err != nil {
			return nil, 0, 0, err
		}
	}
	if c.Bands() != 3 {
		return nil, 0, 0, fmt.Errorf("ssimulacra2: %d bands after conversion to sRGB", c.Bands())
	}
	px, err := c.ToBytes()
	if err != nil {
		return nil, 0, 0, err
	}
	return px, c.Width(), c.Height(), nil
}

// Compare returns the SSIMULACRA 2 score of the encoded image dist against
// the encoded image ref (any format the engine decodes; the same size),
// first frames only.
func Compare(ref, dist []byte) (float64, error) {
	a, err := vips.NewImageFromBuffer(ref)
	if err != nil {
		return 0, fmt.Errorf("compare: reference: %w", err)
	}
	defer a.Close()
	b, err := vips.NewImageFromBuffer(dist)
	if err != nil {
		return 0, fmt.Errorf("compare: distorted: %w", err)
	}
	defer b.Close()
	if a.Width() != b.Width() || a.PageHeight() != b.PageHeight() {
		return 0, fmt.Errorf("compare: sizes differ: %dx%d and %dx%d", a.Width(), a.PageHeight(), b.Width(), b.PageHeight())
	}
	pa, w, h, err := rgbPixels(a)
	if err != nil {
		return 0, err
	}
	pb, _, _, err := rgbPixels(b)
	if err != nil {
		return 0, err
	}
	return ssimulacra2(pa, pb, w, h)
}

// s2Reference is a reference image prepared for SSIMULACRA 2 (the
// reference's half of the work done once), for a search that scores
// several encodes against one image. Close frees it.
type s2Reference struct {
	p    *C.vt_s2_ref
	w, h int
}

// newS2Reference prepares the w x h packed sRGB pixels px.
func newS2Reference(px []byte, w, h int) (*s2Reference, error) {
	if w < 8 || h < 8 {
		return nil, fmt.Errorf("ssimulacra2: %dx%d is smaller than 8x8", w, h)
	}
	if len(px) != 3*w*h {
		return nil, errors.New("ssimulacra2: pixel buffer does not match the size")
	}
	p := C.vt_s2_ref_new((*C.uint8_t)(unsafe.Pointer(&px[0])), C.int(w), C.int(h))
	if p == nil {
		return nil, errors.New("ssimulacra2: out of memory")
	}
	return &s2Reference{p: p, w: w, h: h}, nil
}

// score is the SSIMULACRA 2 score of dist (packed sRGB of the reference's
// size) against the reference.
func (r *s2Reference) score(dist []byte) (float64, error) {
	if len(dist) != 3*r.w*r.h {
		return 0, errors.New("ssimulacra2: pixel buffers do not match the size")
	}
	var score C.double
	if C.vt_s2_ref_score(r.p, (*C.uint8_t)(unsafe.Pointer(&dist[0])), &score) != 0 {
		return 0, errors.New("ssimulacra2: out of memory")
	}
	return float64(score), nil
}

// Close frees the prepared reference.
func (r *s2Reference) Close() { C.vt_s2_ref_free(r.p) }
