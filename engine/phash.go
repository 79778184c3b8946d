package engine

import (
	"image"
	"math"
	"slices"
)

// PHash is the 64-bit DCT perceptual hash of img: its luma averaged down to
// 32 by 32 pixels (aspect ratio ignored), the 8 by 8 lowest frequencies of
// its 2-D DCT-II, one bit per coefficient set when it is above their
// median, first row first, most significant bit first. Resizing and
// recompression move few bits; the Hamming distance between two hashes is
// the number that differ. This is the scheme of pHash.org and of Python's
// imagehash.phash.
func PHash(img *image.NRGBA) uint64 {
	const n, k = 32, 8
	g := lumaGrid(img, n)
	// Separable DCT-II, rows then columns, keeping the k lowest of each.
	var cos [k][n]float64
	for u := range k {
		for x := range n {
			cos[u][x] = math.Cos(math.Pi / n * (float64(x) + 0.5) * float64(u))
		}
	}
	var rows [n][k]float64
	for y := range n {
		for u := range k {
			s := 0.0
			for x := range n {
				s += g[y*n+x] * cos[u][x]
			}
			rows[y][u] = s
		}
	}
	coef := make([]float64, 0, k*k)
	for v := range k {
		for u := range k {
			s := 0.0
			for y := range n {
				s += rows[y][u] * cos[v][y]
			}
			coef = append(coef, s)
		}
	}
	sorted := slices.Clone(coef)
	slices.Sort(sorted)
	median := (sorted[k*k/2-1] + sorted[k*k/2]) / 2
	var h uint64
	for _, c := range coef {
		h <<= 1
		if c > median {
			h |= 1
		}
	}
	return h
}

// lumaGrid averages img's luma (Rec. 601, 0-255) into an n by n grid by
// area: each output cell is the mean of the source pixels it covers.
func lumaGrid(img *image.NRGBA, n int) []float64 {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := make([]float64, n*n)
	cnt := make([]float64, n*n)
	for y := range h {
		row := img.Pix[y*img.Stride:]
		gy := y * n / h
		for x := range w {
			p := row[4*x:]
			l := 0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])
			c := gy*n + x*n/w
			out[c] += l
			cnt[c]++
		}
	}
	// A source smaller than the grid leaves cells empty: fill them from
	// the pixel under their centre.
	for gy := range n {
		for gx := range n {
			c := gy*n + gx
			if cnt[c] > 0 {
				out[c] /= cnt[c]
				continue
			}
			p := img.Pix[(gy*h/n)*img.Stride+4*(gx*w/n):]
			out[c] = 0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])
		}
	}
	return out
}
