package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// sepia is Imagick's sepiaToneImage(threshold): the threshold is a
// percentage of the quantum range (Imbo's default 80 is ImageMagick's
// `-sepia-tone 80%`). Every output channel of that algorithm, including its
// normalize and contrast passes, is a function of the pixel's intensity
// alone, so the whole effect is one 256-entry, three-band lookup table
// computed from the intensity histogram and applied with maplut.
type sepia struct {
	threshold float64
}

func init() {
	register("sepia", describe(parseSepia, "Tones the image in sepia.",
		numParam("threshold", 0, 100, "Tone threshold, a percentage of the range.").def(80),
	))
}

func parseSepia(p *Params) (Step, error) {
	sp := sepia{threshold: p.Float("threshold")}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return sp, nil
}

// rec709 are the luma weights ImageMagick uses for pixel intensity.
var rec709 = []float64{0.212656, 0.715158, 0.072186}

func (sp sepia) Apply(s *State) error {
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	alpha, err := detachAlpha(s.Image)
	if err != nil {
		return err
	}
	closeAlpha := func() {
		if alpha != nil {
			alpha.Close()
		}
	}
	if err := s.Image.Recomb([][]float64{rec709, rec709, rec709}); err != nil {
		closeAlpha()
		return fmt.Errorf("sepia: intensity: %w", err)
	}
	// One band, +0.5 so that the truncating cast rounds.
	err = s.Image.ExtractBand(0, 1)
	if err == nil {
		err = s.Image.Linear1(1, 0.5)
	}
	if err == nil {
		err = s.Image.Cast(vips.BandFormatUchar)
	}
	var hist [256]uint64
	if err == nil {
		hist, err = greyHistogram(s.Image)
	}
	var lut *vips.ImageRef
	if err == nil {
		r, g, b := sepiaTables(sp.threshold/100*65535, &hist)
		lut, err = lutFromTables(r, g, b)
	}
	if err != nil {
		closeAlpha()
		return fmt.Errorf("sepia: %w", err)
	}
	defer lut.Close()
	if err := s.Image.Maplut(lut); err != nil {
		closeAlpha()
		return fmt.Errorf("sepia: %w", err)
	}
	toned, err := s.Image.CopyChangingInterpretation(vips.InterpretationSRGB)
	if err != nil {
		closeAlpha()
		return fmt.Errorf("sepia: %w", err)
	}
	swapImage(s, toned)
	return reattachAlpha(s.Image, alpha)
}

// greyHistogram counts the values of a one-band 8-bit image.
func greyHistogram(img *vips.ImageRef) ([256]uint64, error) {
	var out [256]uint64
	h, err := img.Copy()
	if err != nil {
		return out, err
	}
	defer h.Close()
	if err := h.HistogramFind(); err != nil {
		return out, err
	}
	raw, err := h.ToBytes()
	if err != nil {
		return out, err
	}
	if len(raw) < 256*4 {
		return out, fmt.Errorf("histogram: %d bytes", len(raw))
	}
	for i := range out {
		out[i] = uint64(binary.NativeEndian.Uint32(raw[4*i:]))
	}
	return out, nil
}

// sepiaTables returns the 8-bit R, G and B outputs for each 8-bit intensity,
// following ImageMagick 6 in quantum units (QR = 65535): the tone curves, the
// t/7 floor on green and blue, NormalizeImage and ContrastImage(sharpen) on
// the HSB brightness. NormalizeImage works on DefaultChannels, which include
// SyncChannels: one stretch for all three channels, its black and white
// points where 0.15% of the pixels' toned intensities lie below and 0.05%
// above (ImageMagick 6.9.11; later releases moved them to 2% and 1%).
func sepiaTables(t float64, hist *[256]uint64) (r, g, b *[256]uint8) {
	const qr = 65535.0
	var ch [3][256]float64
	var toned [256]float64 // the toned pixel's intensity, non-decreasing
	for v := 0; v < 256; v++ {
		i := float64(v) * 257
		ch[0][v] = math.Min(qr, i+qr-t)
		ch[1][v] = math.Max(math.Min(qr, i+qr-7*t/6), t/7)
		ch[2][v] = math.Max(math.Max(0, i-t/6), t/7)
		for c := range ch {
			toned[v] += rec709[c] * math.Min(math.Max(ch[c][v], 0), qr)
		}
	}
	lo, hi := sepiaStretch(&toned, hist)
	var out [3][256]uint8
	for v := 0; v < 256; v++ {
		var px [3]float64
		for c := range ch {
			px[c] = math.Min(math.Max(ch[c][v], 0), qr)
			if hi > lo { // a flat image is left alone, as in ImageMagick
				px[c] = math.Min(math.Max((math.Round(px[c])-lo)/(hi-lo), 0), 1) * qr
			}
		}
		bright := math.Max(px[0], math.Max(px[1], px[2])) / qr
		scale := 1.0
		if bright > 0 {
			nb := bright + 0.5*(0.5*(math.Sin(math.Pi*(bright-0.5))+1)-bright)
			scale = math.Min(math.Max(nb, 0), 1) / bright
		}
		for c := range px {
			out[c][v] = uint8(math.Round(math.Min(px[c]*scale, qr) / 257))
		}
	}
	return &out[0], &out[1], &out[2]
}

// sepiaStretch returns NormalizeImage's black and white points (in quantum
// units) from the input intensity histogram: the toned intensity is a
// non-decreasing function of it, so its histogram is this one relabelled.
func sepiaStretch(toned *[256]float64, hist *[256]uint64) (lo, hi float64) {
	var n uint64
	for _, c := range hist {
		n += c
	}
	blackAt, whiteAt := 0.0015*float64(n), float64(n)-0.9995*float64(n)
	lo, hi = 0, 65535
	var cum float64
	for v := 0; v < 256; v++ {
		if cum += float64(hist[v]); cum > blackAt {
			lo = math.Round(toned[v])
			break
		}
	}
	cum = 0
	for v := 255; v >= 0; v-- {
		if cum += float64(hist[v]); cum > whiteAt {
			hi = math.Round(toned[v])
			break
		}
	}
	return lo, hi
}

var _ Step = sepia{}
