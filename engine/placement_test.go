package engine

import (
	"math"
	"testing"
)

// oldWatermarkPlace is watermark.place as it was before the placement
// table: Imbo's switch over the positions.
func oldWatermarkPlace(position string, ox, oy, iw, ih, ww, wh int) (int, int) {
	x, y := float64(ox), float64(oy)
	centreX := float64(iw)/2 - float64(ww)/2 + x
	centreY := float64(ih)/2 - float64(wh)/2 + y
	right, bottom := float64(iw-ww)+x, float64(ih-wh)+y
	var px, py float64
	switch position {
	case "top-left":
		px, py = x, y
	case "top-right":
		px, py = right, y
	case "bottom-left":
		px, py = x, bottom
	case "bottom-right":
		px, py = right, bottom
	case "center":
		px, py = centreX, centreY
	case "top":
		px, py = centreX, y
	case "bottom":
		px, py = centreX, bottom
	case "left":
		px, py = x, centreY
	case "right":
		px, py = right, centreY
	}
	return int(math.Trunc(px)), int(math.Trunc(py))
}

// oldCompass is gravity.go's compass table before the placement table.
var oldCompass = map[gravity][2]int{
	"centre": {1, 1}, "north": {1, 0}, "northeast": {2, 0}, "east": {2, 1}, "southeast": {2, 2},
	"south": {1, 2}, "southwest": {0, 2}, "west": {0, 1}, "northwest": {0, 0},
}

// sizes are (outer W, H, inner w, h): even and odd space left, none, and
// an inner area larger than the outer one.
var placementSizes = [][4]int{
	{160, 120, 60, 60}, {161, 121, 60, 60}, {100, 100, 100, 100}, {50, 40, 61, 47}, {7, 9, 2, 3},
}

// TestPlacementWatermark checks that every watermark position, with
// offsets of both signs, lands where Imbo's switch put it.
func TestPlacementWatermark(t *testing.T) {
	t.Parallel()
	positions := describeWatermarkPositions(t)
	for _, pos := range positions {
		t.Run(pos, func(t *testing.T) {
			if _, ok := positionAnchor(pos); !ok {
				t.Fatalf("position %s has no placement", pos)
			}
			for _, sz := range placementSizes {
				for _, off := range [][2]int{{0, 0}, {5, 7}, {-3, -4}, {1, -1}, {-200, 300}} {
					w := watermark{position: pos, x: off[0], y: off[1]}
					gx, gy := w.place(sz[0], sz[1], sz[2], sz[3])
					wx, wy := oldWatermarkPlace(pos, off[0], off[1], sz[0], sz[1], sz[2], sz[3])
					if gx != wx || gy != wy {
						t.Errorf("size %v offset %v: (%d, %d), want (%d, %d)", sz, off, gx, gy, wx, wy)
					}
				}
			}
		})
	}
}

// TestPlacementCompass checks that every compass gravity gives the offsets
// of the former compass table, and that the other gravities have none.
func TestPlacementCompass(t *testing.T) {
	t.Parallel()
	for _, g := range gravities {
		t.Run(string(g), func(t *testing.T) {
			a, ok := compassAnchor(gravity(g))
			old, wantOK := oldCompass[gravity(g)]
			if ok != wantOK {
				t.Fatalf("compassAnchor(%s) ok = %v, want %v", g, ok, wantOK)
			}
			for _, sz := range placementSizes {
				x, y := a.offset(sz[0], sz[1], sz[2], sz[3])
				wx, wy := old[0]*(sz[0]-sz[2])/2, old[1]*(sz[1]-sz[3])/2
				if x != wx || y != wy {
					t.Errorf("size %v: (%d, %d), want (%d, %d)", sz, x, y, wx, wy)
				}
			}
		})
	}
	if len(placements) != len(oldCompass) {
		t.Errorf("%d placements, want %d", len(placements), len(oldCompass))
	}
}

// describeWatermarkPositions returns the values watermark declares for
// its position parameter, so a new position without a placement fails.
func describeWatermarkPositions(t *testing.T) []string {
	t.Helper()
	for _, d := range NewRegistry().Describe() {
		if d.Name != "watermark" {
			continue
		}
		for _, p := range d.Params {
			if p.Name == "position" {
				return p.Values
			}
		}
	}
	t.Fatal("watermark declares no position parameter")
	return nil
}
