package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// gravity says which part of an image a crop keeps: the centre, an edge or
// corner (the compass points), the most interesting part as libvips'
// smartcrop finds it (attention: skin, saturation and edges; entropy: the
// busiest area), or the points of interest of the image's metadata (faces).
type gravity string

// gravities lists the accepted values, the default first.
var gravities = []string{
	"centre", "north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest",
	"attention", "entropy", "faces",
}

// gravityDoc describes the gravity parameter, the same for every user.
const gravityDoc = "Which part to keep: centre, a compass point (north, northeast, ...), " +
	"attention (the most salient area), entropy (the busiest area), or faces (the points of " +
	"interest in the image's metadata poi, attention when it has none)."

// parseGravity reads the gravity parameter, its declared default when absent.
func parseGravity(p *Params) gravity {
	return gravity(p.Enum("gravity"))
}

// place returns the top-left corner, in chain geometry, of the w x h area
// of the state's current image (s.Size(), at least w x h) that g keeps.
func (g gravity) place(s *State, w, h int) (int, int, error) {
	W, H := s.Size()
	if a, ok := compassAnchor(g); ok {
		x, y := a.offset(W, H, w, h)
		return x, y, nil
	}
	if g == "faces" {
		if cx, cy, ok := poiCentre(s, W, H); ok {
			x := int(math.Round(cx - float64(w)/2))
			y := int(math.Round(cy - float64(h)/2))
			return min(max(x, 0), W-w), min(max(y, 0), H-h), nil
		}
	}
	interesting := vips.InterestingAttention
	if g == "entropy" {
		interesting = vips.InterestingEntropy
	}
	return smartOffset(s, w, h, interesting)
}

// smartOffset runs libvips' smartcrop on a copy of the current image (which
// may be shrunk by the decoder) and returns where it cut, in chain geometry.
// The crop itself is left to the caller, so it goes through cropTo like any
// other. The image is rendered to memory first: smartcrop reads it twice,
// and a chain of streaming steps decodes its source only once, top to
// bottom (after a thumbnail's resize that is the small image).
func smartOffset(s *State, w, h int, interesting vips.Interesting) (int, int, error) {
	if err := copyMemory(s.Image); err != nil {
		return 0, 0, fmt.Errorf("smartcrop: %w", err)
	}
	W, H := s.Size()
	fx, fy := s.shrunk()
	iw, ih := s.Image.Width(), s.Image.Height()
	cw := min(max(int(math.Round(float64(w)*fx)), 1), iw)
	ch := min(max(int(math.Round(float64(h)*fy)), 1), ih)
	cp, err := s.Image.Copy()
	if err != nil {
		return 0, 0, fmt.Errorf("smartcrop: %w", err)
	}
	defer cp.Close()
	if err := cp.SmartCrop(cw, ch, interesting); err != nil {
		return 0, 0, fmt.Errorf("smartcrop: %w", err)
	}
	// The cut area's output keeps its position as a negative origin hint
	// (libvips' extract_area sets Xoffset and Yoffset so).
	x := int(math.Round(float64(-cp.OffsetX()) / fx))
	y := int(math.Round(float64(-cp.OffsetY()) / fy))
	return min(max(x, 0), W-w), min(max(y, 0), H-h), nil
}

// poiCentre returns the centre of the box that holds every point of
// interest of the image's metadata (metadataPOIs, a point counting as an
// empty box), scaled from the stored image's size to W x H; ok is false
// when the metadata has none.
func poiCentre(s *State, W, H int) (cx, cy float64, ok bool) {
	pois := metadataPOIs(s.Env.Metadata)
	if len(pois) == 0 || s.OrigWidth <= 0 || s.OrigHeight <= 0 {
		return 0, 0, false
	}
	x0, y0, x1, y1 := pois[0].X, pois[0].Y, pois[0].X+pois[0].W, pois[0].Y+pois[0].H
	for _, p := range pois[1:] {
		x0, y0 = min(x0, p.X), min(y0, p.Y)
		x1, y1 = max(x1, p.X+p.W), max(y1, p.Y+p.H)
	}
	sx, sy := float64(W)/float64(s.OrigWidth), float64(H)/float64(s.OrigHeight)
	return float64(x0+x1) / 2 * sx, float64(y0+y1) / 2 * sy, true
}

// facesThumbnail and facesCrop are thumbnail and crop with gravity=faces:
// they read the image's metadata, so the chain asks for it.
type (
	facesThumbnail struct{ *thumbnail }
	facesCrop      struct{ *crop }
)

func (facesThumbnail) readsMetadata() {}
func (facesCrop) readsMetadata()      {}

var (
	_ loadHinter = facesThumbnail{}
	_ streamer   = facesCrop{}
)
