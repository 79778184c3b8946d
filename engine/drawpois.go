package engine

import (
	"fmt"
	"image"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// drawPois draws the points of interest from the image's metadata `poi`:
// a box {x,y,width,height} as a rectangle outline
// borderSize thick outside the box, a point {cx,cy} as an antialiased circle
// of diameter pointSize with a borderSize stroke.
//
// Coordinates are those of the original image. Unlike Imbo, they are
// scaled when earlier steps resized the image, so the marks stay on their
// subjects (borderSize and pointSize are in output pixels). Entries with
// neither a box nor a centre, or with non-numeric values, are skipped.
type drawPois struct {
	color      Color
	borderSize int
	pointSize  int
}

func init() {
	register("drawPois", describe(parseDrawPois, "Marks the points of interest stored in the image's metadata (poi).",
		colorParam("color", "Colour of the marks.").def("ff0000"),
		intParam("borderSize", 1, 1000, "Line width in pixels.").def(2),
		intParam("pointSize", 1, 10000, "Diameter of a point's circle in pixels.").def(30),
	))
}

func parseDrawPois(p *Params) (Step, error) {
	d := drawPois{
		color:      p.Color("color"),
		borderSize: p.Int("borderSize"),
		pointSize:  p.Int("pointSize"),
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d drawPois) Apply(s *State) error {
	list, _ := s.Env.Metadata["poi"].([]any)
	if len(list) == 0 {
		return nil
	}
	if err := toSRGB8(s.Image); err != nil {
		return err
	}
	W, H := s.Image.Width(), s.Image.Height()
	sx, sy := 1.0, 1.0
	if s.OrigWidth > 0 && s.OrigHeight > 0 {
		sx, sy = float64(W)/float64(s.OrigWidth), float64(H)/float64(s.OrigHeight)
	}
	// vips_draw_* work in place on a memory image: draw on a private copy.
	canvas, err := s.Image.Copy()
	if err != nil {
		return fmt.Errorf("drawPois: %w", err)
	}
	swapImage(s, canvas)
	ink := vips.ColorRGBA{R: d.color.R, G: d.color.G, B: d.color.B, A: 255}
	for _, entry := range list {
		poi, _ := entry.(map[string]any)
		if x, y, w, h, ok := poiNumbers(poi, "x", "y", "width", "height"); ok {
			err = d.box(s.Image, ink, int(x*sx), int(y*sy), int(math.Round(w*sx)), int(math.Round(h*sy)))
		} else if cx, cy, _, _, ok := poiNumbers(poi, "cx", "cy", "cx", "cy"); ok {
			err = d.circle(s.Image, cx*sx, cy*sy)
		}
		if err != nil {
			return fmt.Errorf("drawPois: %w", err)
		}
	}
	return nil
}

// box draws four filled bars with inclusive coordinates, b = borderSize-1
// pixels outside the box and one pixel on its edge.
func (d drawPois) box(img *vips.ImageRef, ink vips.ColorRGBA, x, y, w, h int) error {
	W, H := img.Width(), img.Height()
	b := d.borderSize - 1
	left, right := max(0, x-b), min(W-1, x+w+b)
	bars := [][4]int{
		{left, y, x, y + h},                // left
		{x + w, y, min(W-1, x+w+b), y + h}, // right
		{left, max(0, y-b), right, y},      // top
		{left, y + h, right, min(H-1, y+h+b)},
	}
	for _, r := range bars {
		x1, y1, x2, y2 := max(r[0], 0), max(r[1], 0), min(r[2], W-1), min(r[3], H-1)
		if x2 < x1 || y2 < y1 {
			continue // entirely outside the image
		}
		if err := img.DrawRect(ink, x1, y1, x2-x1+1, y2-y1+1, true); err != nil {
			return err
		}
	}
	return nil
}

// circle composites an antialiased ring drawn in Go: radius pointSize/2,
// stroke borderSize centred on it.
func (d drawPois) circle(img *vips.ImageRef, cx, cy float64) error {
	r := float64(d.pointSize) / 2
	half := float64(d.borderSize) / 2
	ext := int(math.Ceil(r+half)) + 1
	size := 2*ext + 1
	ox, oy := int(math.Floor(cx))-ext, int(math.Floor(cy))-ext
	if ox >= img.Width() || oy >= img.Height() || ox+size <= 0 || oy+size <= 0 {
		return nil
	}
	ring := image.NewNRGBA(image.Rect(0, 0, size, size))
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			// (cx, cy) names a pixel, as the box coordinates do: distances
			// are between pixel centres.
			dist := math.Hypot(float64(ox+px)-cx, float64(oy+py)-cy)
			cover := math.Min(math.Max(half+0.5-math.Abs(dist-r), 0), 1)
			if cover > 0 {
				i := ring.PixOffset(px, py)
				ring.Pix[i], ring.Pix[i+1], ring.Pix[i+2] = d.color.R, d.color.G, d.color.B
				ring.Pix[i+3] = uint8(math.Round(255 * cover))
			}
		}
	}
	over, err := importNRGBA(ring)
	if err != nil {
		return err
	}
	defer over.Close()
	bands := img.Bands()
	if err := img.Composite(over, vips.BlendModeOver, ox, oy); err != nil {
		return err
	}
	if img.Bands() > bands { // composite adds alpha to an opaque base
		if err := img.ExtractBand(0, bands); err != nil {
			return err
		}
	}
	return castTo(img, vips.BandFormatUchar)
}

// poiNumbers reads four numeric fields of a metadata object (JSON numbers
// arrive as float64; numeric strings are accepted too).
func poiNumbers(m map[string]any, a, b, c, d string) (va, vb, vc, vd float64, ok bool) {
	if m == nil {
		return 0, 0, 0, 0, false
	}
	var out [4]float64
	for i, k := range []string{a, b, c, d} {
		v, found := poiNumber(m[k])
		if !found {
			return 0, 0, 0, 0, false
		}
		out[i] = v
	}
	return out[0], out[1], out[2], out[3], true
}

func poiNumber(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case interface{ Float64() (float64, error) }: // json.Number
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	case string:
		if _, err := fmt.Sscanf(n, "%g", &f); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

var _ Step = drawPois{}

func (drawPois) readsMetadata() {}
