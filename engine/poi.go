package engine

import (
	"math"
	"strconv"
	"strings"
)

// POI is one point of interest of an image, in the pixels of the stored
// (original) image: a box W x H with its top-left corner at (X, Y), or a
// point (X, Y) when Box is false (W and H are then 0).
//
// Every coordinate is read by one rule (poiCoordinate): a finite number
// (a JSON number, a Go integer or float, or a numeric string), rounded to
// the nearest whole pixel, halves away from zero (10.5 is 11, -10.5 is
// -11). smartSize, gravity=faces and drawPois all read POIs through
// parsePOI, so they agree on where a fractional POI lies.
type POI struct {
	X, Y, W, H int
	Box        bool
}

// maxPOICoordinate bounds a coordinate, so that rounding it to an int and
// adding a width cannot overflow; no image is that large.
const maxPOICoordinate = 1 << 30

// Centre returns the middle of the box, or the point.
func (p POI) Centre() (float64, float64) {
	return float64(p.X) + float64(p.W)/2, float64(p.Y) + float64(p.H)/2
}

// metadataPOIs returns the valid entries of the metadata's `poi` list, in
// order; malformed entries are left out (parsePOI).
func metadataPOIs(meta map[string]any) []POI {
	list, _ := meta["poi"].([]any)
	var out []POI
	for _, e := range list {
		if p, ok := parsePOI(e); ok {
			out = append(out, p)
		}
	}
	return out
}

// parsePOI reads one entry of a metadata `poi` list: an object with a
// centre {cx, cy} (a point), else {x, y, width, height} (a box; zero sizes
// allowed) or {x, y} (a point). cx and cy win over x and y when an entry
// has both. ok is false for anything else: not an object, a missing or
// non-numeric coordinate, only one of width and height, a negative width or
// height, or a coordinate beyond ±2^30.
func parsePOI(v any) (POI, bool) {
	m, _ := v.(map[string]any)
	if m == nil {
		return POI{}, false
	}
	if cx, okx := poiCoordinate(m["cx"]); okx {
		if cy, oky := poiCoordinate(m["cy"]); oky {
			return POI{X: cx, Y: cy}, true
		}
	}
	x, okx := poiCoordinate(m["x"])
	y, oky := poiCoordinate(m["y"])
	if !okx || !oky {
		return POI{}, false
	}
	_, hasW := m["width"]
	_, hasH := m["height"]
	if !hasW && !hasH {
		return POI{X: x, Y: y}, true
	}
	w, okw := poiCoordinate(m["width"])
	h, okh := poiCoordinate(m["height"])
	if !okw || !okh || w < 0 || h < 0 {
		return POI{}, false
	}
	return POI{X: x, Y: y, W: w, H: h, Box: true}, true
}

// parsePOIParam reads smartSize's poi parameter, `x,y`, as a point by the
// same rule (extra comma-separated parts are ignored).
func parsePOIParam(s string) (POI, bool) {
	parts := strings.Split(s, ",")
	if len(parts) < 2 {
		return POI{}, false
	}
	x, okx := poiCoordinate(parts[0])
	y, oky := poiCoordinate(parts[1])
	return POI{X: x, Y: y}, okx && oky
}

// poiCoordinate reads one coordinate: a finite number within
// ±maxPOICoordinate, rounded half away from zero. Strings are parsed whole
// (surrounding spaces allowed, "12px" is not a number).
func poiCoordinate(v any) (int, bool) {
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
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(n), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.Abs(f) > maxPOICoordinate {
		return 0, false
	}
	return int(math.Round(f)), true
}
