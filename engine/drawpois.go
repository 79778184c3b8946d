package engine

import (
	"fmt"
	"image"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// drawPois draws the points of interest from the image's metadata `poi`
// (read by parsePOI): a box {x,y,width,height} as a rectangle outline
// borderSize thick outside the box, a point {cx,cy} or {x,y} as an
// antialiased circle with a borderSize stroke. Imbo draws the circle with
// ImageMagick's circle(cx, cy, cx+pointSize, cy+pointSize), whose second
// point lies on the circle: its radius is pointSize x sqrt(2) (42 pixels at
// the default 30).
//
// Coordinates are those of the original image. Unlike Imbo, they are
// scaled when earlier steps resized the image, so the marks stay on their
// subjects (borderSize and pointSize are in output pixels). Malformed
// entries (parsePOI) are skipped.
type drawPois struct {
	color      Color
	borderSize int
	pointSize  int
}

func init() {
	register("drawPois", describe(parseDrawPois, "Marks the points of interest stored in the image's metadata (poi).",
		colorParam("color", "Colour of the marks.").def("ff0000"),
		intParam("borderSize", 1, 1000, "Line width in pixels.").def(2),
		intParam("pointSize", 1, 10000, "A point's circle passes through (cx+pointSize, cy+pointSize): its radius is pointSize x sqrt(2).").def(30),
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
	pois := metadataPOIs(s.Env.Metadata)
	if len(pois) == 0 {
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
	for _, p := range pois {
		x, y := float64(p.X)*sx, float64(p.Y)*sy
		if p.Box {
			err = d.box(s.Image, ink, int(x), int(y), int(math.Round(float64(p.W)*sx)), int(math.Round(float64(p.H)*sy)))
		} else {
			err = d.circle(s.Image, x, y)
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

// circle composites an antialiased ring drawn in Go: radius pointSize x
// sqrt(2), stroke borderSize centred on it.
func (d drawPois) circle(img *vips.ImageRef, cx, cy float64) error {
	r := float64(d.pointSize) * math.Sqrt2
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

var _ Step = drawPois{}

func (drawPois) readsMetadata() {}
