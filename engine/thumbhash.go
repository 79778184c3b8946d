package engine

import (
	"encoding/base64"
	"image"
	"math"
)

// ThumbHash encodes img (at most 100 by 100 pixels; larger is refused with
// "") as a ThumbHash in standard base64, following the reference encoder
// at github.com/evanw/thumbhash: luminance, two chroma and (when some pixel
// is transparent) alpha channels, each a small DCT quantised to 4 bits.
func ThumbHash(img *image.NRGBA) string {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if w == 0 || h == 0 || w > 100 || h > 100 {
		return ""
	}
	n := w * h
	var avgR, avgG, avgB, avgA float64
	for i := range n {
		p := img.Pix[(i/w)*img.Stride+4*(i%w):]
		a := float64(p[3]) / 255
		avgR += a / 255 * float64(p[0])
		avgG += a / 255 * float64(p[1])
		avgB += a / 255 * float64(p[2])
		avgA += a
	}
	if avgA > 0 {
		avgR, avgG, avgB = avgR/avgA, avgG/avgA, avgB/avgA
	}
	hasAlpha := avgA < float64(n)
	limit := 7
	if hasAlpha {
		limit = 5
	}
	lx := max(1, jround(float64(limit*w)/float64(max(w, h))))
	ly := max(1, jround(float64(limit*h)/float64(max(w, h))))
	l, p, q, a := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		px := img.Pix[(i/w)*img.Stride+4*(i%w):]
		alpha := float64(px[3]) / 255
		r := avgR*(1-alpha) + alpha/255*float64(px[0])
		g := avgG*(1-alpha) + alpha/255*float64(px[1])
		b := avgB*(1-alpha) + alpha/255*float64(px[2])
		l[i], p[i], q[i], a[i] = (r+g+b)/3, (r+g)/2-b, r-g, alpha
	}
	lc := encodeChannel(l, w, h, max(3, lx), max(3, ly))
	pc := encodeChannel(p, w, h, 3, 3)
	qc := encodeChannel(q, w, h, 3, 3)
	var ac thChannel
	if hasAlpha {
		ac = encodeChannel(a, w, h, 5, 5)
	}
	header24 := jround(63*lc.dc) | jround(31.5+31.5*pc.dc)<<6 | jround(31.5+31.5*qc.dc)<<12 | jround(31*lc.scale)<<18
	if hasAlpha {
		header24 |= 1 << 23
	}
	side := lx
	if w > h {
		side = ly
	}
	header16 := side | jround(63*pc.scale)<<3 | jround(63*qc.scale)<<9
	if w > h {
		header16 |= 1 << 15
	}
	start := 5
	if hasAlpha {
		start = 6
	}
	count := len(lc.ac) + len(pc.ac) + len(qc.ac) + len(ac.ac)
	hash := make([]byte, start+(count+1)/2)
	hash[0], hash[1], hash[2] = byte(header24), byte(header24>>8), byte(header24>>16)
	hash[3], hash[4] = byte(header16), byte(header16>>8)
	if hasAlpha {
		hash[5] = byte(jround(15*ac.dc) | jround(15*ac.scale)<<4)
	}
	idx := 0
	for _, c := range []thChannel{lc, pc, qc, ac} {
		for _, v := range c.ac {
			hash[start+idx>>1] |= byte(jround(15*v) << ((idx & 1) << 2))
			idx++
		}
	}
	return base64.StdEncoding.EncodeToString(hash)
}

// thChannel is one ThumbHash channel's DCT: the DC term, the AC terms
// normalised to 0..1 and their scale.
type thChannel struct {
	dc, scale float64
	ac        []float64
}

func encodeChannel(ch []float64, w, h, nx, ny int) thChannel {
	var c thChannel
	fx := make([]float64, w)
	for cy := range ny {
		for cx := 0; cx*ny < nx*(ny-cy); cx++ {
			for x := range w {
				fx[x] = math.Cos(math.Pi / float64(w) * float64(cx) * (float64(x) + 0.5))
			}
			f := 0.0
			for y := range h {
				fy := math.Cos(math.Pi / float64(h) * float64(cy) * (float64(y) + 0.5))
				for x := range w {
					f += ch[x+y*w] * fx[x] * fy
				}
			}
			f /= float64(w * h)
			if cx > 0 || cy > 0 {
				c.ac = append(c.ac, f)
				c.scale = max(c.scale, math.Abs(f))
			} else {
				c.dc = f
			}
		}
	}
	if c.scale > 0 {
		for i := range c.ac {
			c.ac[i] = 0.5 + 0.5/c.scale*c.ac[i]
		}
	}
	return c
}

// jround rounds half up, as the reference encoder's Math.round does.
func jround(v float64) int { return int(math.Floor(v + 0.5)) }
