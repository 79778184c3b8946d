package engine

// anchor says where a smaller area sits inside a larger one along each
// axis, in halves of the space left over: 0 against the left (top) edge,
// 1 centred, 2 against the right (bottom) edge.
type anchor struct{ h, v int }

// placements is the one table of placements by name: the compass gravities
// (crop, thumbnail and text; gravity.go) and watermark's positions
// (watermark.go) name the same nine anchors.
var placements = []struct {
	compass  gravity
	position string
	anchor
}{
	{"northwest", "top-left", anchor{0, 0}},
	{"north", "top", anchor{1, 0}},
	{"northeast", "top-right", anchor{2, 0}},
	{"west", "left", anchor{0, 1}},
	{"centre", "center", anchor{1, 1}},
	{"east", "right", anchor{2, 1}},
	{"southwest", "bottom-left", anchor{0, 2}},
	{"south", "bottom", anchor{1, 2}},
	{"southeast", "bottom-right", anchor{2, 2}},
}

// compassAnchor returns the anchor of a compass gravity; ok is false for
// the other gravities (attention, entropy, faces).
func compassAnchor(g gravity) (anchor, bool) {
	for _, p := range placements {
		if p.compass == g {
			return p.anchor, true
		}
	}
	return anchor{}, false
}

// positionAnchor returns the anchor of a watermark position.
func positionAnchor(position string) (anchor, bool) {
	for _, p := range placements {
		if p.position == position {
			return p.anchor, true
		}
	}
	return anchor{}, false
}

// offset returns the top-left corner of a w x h area placed by a in a
// W x H one: 0, half or all of the space left over on each axis (negative
// when the area is the larger), halves truncated toward zero.
func (a anchor) offset(W, H, w, h int) (int, int) {
	return a.h * (W - w) / 2, a.v * (H - h) / 2
}
