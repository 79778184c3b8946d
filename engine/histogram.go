package engine

import (
	"fmt"
	"image"
	"math"
)

// histogram replaces the image with a plot of its per-channel 8-bit
// histogram: 256*scale wide, floor(width/ratio) high, one layer of vertical
// bars per channel with its alpha divided by 1.1, composited on black with
// Imagick's COMPOSITE_BLEND, which ImageMagick applies as a sum at 100% of
// each: where bars overlap their colours add (red and blue make pink, all
// three nearly white). The black background is then made transparent. The plot is drawn in Go at one pixel per
// bucket and widened with libvips zoom.
type histogram struct {
	scale            int
	ratio            float64
	red, green, blue Color
}

func init() {
	register("histogram", describe(parseHistogram, "Replaces the image with a plot of its colour histogram.",
		intParam("scale", 1, 8, "Width multiplier: the plot is 256 x scale pixels wide.").def(1),
		numParam("ratio", 0.1, 8, "Width to height ratio of the plot.").def(1.618),
		colorParam("red", "Colour of the red channel's bars.").def("D93333"),
		colorParam("green", "Colour of the green channel's bars.").def("58C458"),
		colorParam("blue", "Colour of the blue channel's bars.").def("3767BF"),
	))
}

func parseHistogram(p *Params) (Step, error) {
	h := histogram{
		scale: p.Int("scale"),
		ratio: p.Float("ratio"),
		red:   p.Color("red"),
		green: p.Color("green"),
		blue:  p.Color("blue"),
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h histogram) Apply(s *State) error {
	counts, err := channelHistogram(s.Image)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	width := 256 * h.scale
	height := int(math.Floor(float64(width) / h.ratio))
	plot := h.draw(&counts, height)
	img, err := importNRGBA(plot)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	if h.scale > 1 {
		if err := img.Zoom(h.scale, 1); err != nil {
			img.Close()
			return fmt.Errorf("histogram: %w", err)
		}
	}
	swapImage(s, img)
	return nil
}

// draw renders the 256 x height plot.
func (h histogram) draw(counts *[3][256]uint64, height int) *image.NRGBA {
	var peak uint64
	for c := range counts {
		for _, n := range counts[c] {
			peak = max(peak, n)
		}
	}
	// Each layer adds its colour times its alpha, 1/1.1, to the result so far.
	const a = 1 / 1.1
	colours := [3]Color{h.red, h.green, h.blue}
	acc := make([][3]float64, 256*height)
	for c, col := range colours {
		ink := [3]float64{float64(col.R), float64(col.G), float64(col.B)}
		for x := 0; x < 256; x++ {
			bar := 0
			if peak > 0 {
				bar = int(float64(height) * float64(counts[c][x]) / float64(peak))
			}
			for y := height - bar; y < height; y++ {
				px := &acc[y*256+x]
				for k := range px {
					px[k] = min(px[k]+a*ink[k], 255)
				}
			}
		}
	}
	out := image.NewNRGBA(image.Rect(0, 0, 256, height))
	for i, px := range acc {
		r, g, b := uint8(math.Round(px[0])), uint8(math.Round(px[1])), uint8(math.Round(px[2]))
		if r|g|b != 0 { // black is made transparent
			out.Pix[4*i], out.Pix[4*i+1], out.Pix[4*i+2], out.Pix[4*i+3] = r, g, b, 255
		}
	}
	return out
}

// stillOnly: a histogram of each frame makes no animation anyone wants; an
// animated source is plotted from its first frame.
func (histogram) stillOnly() {}

var (
	_ Step      = histogram{}
	_ stillOnly = histogram{}
)
