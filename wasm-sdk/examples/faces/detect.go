package main

import (
	_ "embed"
	"fmt"
	"image"
	"math"
	"sort"

	"github.com/vitrine/vitrine/wasm-sdk/examples/faces/pigo"
)

// facefinder is pico's frontal-face cascade as pigo ships it (MIT licence,
// pigo/LICENSE), embedded so the module needs no file at run time.
//
//go:embed facefinder
var facefinder []byte

// settings are the filter's settings (filter.json).
type settings struct {
	// MaxSide is the longest side, in pixels, the picture is scaled down to
	// (by whole factors) before the search, whose time grows with its
	// square. Faces under a tenth of the short side are not searched for.
	MaxSide int `json:"maxSide"`
	// MinQuality is the least detection score a face must have; pigo's
	// scores grow with the number of windows that agree.
	MinQuality float64 `json:"minQuality"`
}

// defaults are used where the manifest's settings say nothing.
var defaults = settings{MaxSide: 480, MinQuality: 5}

// face is one face found, in the stored image's pixels: the point of
// interest format that smartSize, drawPois and gravity=faces read.
type face struct {
	X       int     `json:"x"`
	Y       int     `json:"y"`
	Width   int     `json:"width"`
	Height  int     `json:"height"`
	Quality float64 `json:"quality"`
	Source  string  `json:"source"`
}

// detector holds the unpacked cascade.
type detector struct{ cascade *pigo.Pigo }

// newDetector unpacks the embedded cascade.
func newDetector() (*detector, error) {
	c, err := pigo.NewPigo().Unpack(facefinder)
	if err != nil {
		return nil, fmt.Errorf("faces: unpack cascade: %w", err)
	}
	return &detector{cascade: c}, nil
}

// find returns the faces in img, best first.
func (d *detector) find(img image.Image, s settings) []face {
	gray, cols, rows, k := grayscale(img, s.MaxSide)
	if cols < 24 || rows < 24 {
		return nil
	}
	// Faces under a tenth of the short side are too small to steer a crop;
	// leaving them out is most of the search's time saved.
	dets := d.cascade.RunCascade(pigo.CascadeParams{
		MinSize:     max(20, min(cols, rows)/10),
		MaxSize:     min(cols, rows),
		ShiftFactor: 0.1,
		ScaleFactor: 1.15,
		ImageParams: pigo.ImageParams{Pixels: gray, Rows: rows, Cols: cols, Dim: cols},
	}, 0)
	dets = d.cascade.ClusterDetections(dets, 0.2)
	b := img.Bounds()
	var out []face
	for _, det := range dets {
		if float64(det.Q) < s.MinQuality {
			continue
		}
		side := det.Scale * k
		x := max((det.Col-det.Scale/2)*k, 0)
		y := max((det.Row-det.Scale/2)*k, 0)
		out = append(out, face{
			X: x, Y: y, Width: min(side, b.Dx()-x), Height: min(side, b.Dy()-y),
			Quality: math.Round(float64(det.Q)*10) / 10, Source: "faces",
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Quality > out[j].Quality })
	return out
}

// grayscale returns the luma of img scaled down by the whole factor k that
// brings its longest side to at most maxSide, averaging k x k blocks. A
// JPEG's luma plane is read as it is.
func grayscale(img image.Image, maxSide int) (pix []uint8, cols, rows, k int) {
	b := img.Bounds()
	k = max(1, int(math.Ceil(float64(max(b.Dx(), b.Dy()))/float64(max(maxSide, 1)))))
	cols, rows = b.Dx()/k, b.Dy()/k
	pix = make([]uint8, cols*rows)
	luma := func(x, y int) uint32 {
		r, g, bl, _ := img.At(x, y).RGBA()
		return (19595*r + 38470*g + 7471*bl + 1<<15) >> 24
	}
	if yc, ok := img.(*image.YCbCr); ok {
		luma = func(x, y int) uint32 { return uint32(yc.Y[yc.YOffset(x, y)]) }
	}
	for r := range rows {
		for c := range cols {
			var sum uint32
			for dy := range k {
				for dx := range k {
					sum += luma(b.Min.X+c*k+dx, b.Min.Y+r*k+dy)
				}
			}
			pix[r*cols+c] = uint8(sum / uint32(k*k))
		}
	}
	return pix, cols, rows, k
}
