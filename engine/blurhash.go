package engine

import (
	"image"
	"math"
	"strings"
)

// base83 is BlurHash's alphabet.
const base83 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~"

// BlurHash encodes img (alpha ignored) as a BlurHash string with cx by cy
// components (1-9 each), following the reference encoder at
// github.com/woltapp/blurhash: a DCT of the linear-light image, the DC term
// as sRGB and the AC terms quantised against their maximum.
func BlurHash(img *image.NRGBA, cx, cy int) string {
	cx, cy = min(max(cx, 1), 9), min(max(cy, 1), 9)
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if w == 0 || h == 0 {
		return ""
	}
	lin := linearPixels(img)
	factors := make([][3]float64, 0, cx*cy)
	fx := make([]float64, w)
	for j := range cy {
		for i := range cx {
			for x := range w {
				fx[x] = math.Cos(math.Pi * float64(i) * float64(x) / float64(w))
			}
			var f [3]float64
			for y := range h {
				fy := math.Cos(math.Pi * float64(j) * float64(y) / float64(h))
				row := lin[y*w*3:]
				for x := range w {
					b := fx[x] * fy
					f[0] += b * row[3*x]
					f[1] += b * row[3*x+1]
					f[2] += b * row[3*x+2]
				}
			}
			norm := 2.0
			if i == 0 && j == 0 {
				norm = 1
			}
			s := norm / float64(w*h)
			factors = append(factors, [3]float64{f[0] * s, f[1] * s, f[2] * s})
		}
	}
	var b strings.Builder
	b.WriteString(encode83((cx-1)+(cy-1)*9, 1))
	maxAC := 1.0
	if len(factors) > 1 {
		actual := 0.0
		for _, f := range factors[1:] {
			actual = max(actual, math.Abs(f[0]), math.Abs(f[1]), math.Abs(f[2]))
		}
		q := int(max(0, min(82, math.Floor(actual*166-0.5))))
		maxAC = float64(q+1) / 166
		b.WriteString(encode83(q, 1))
	} else {
		b.WriteString(encode83(0, 1))
	}
	dc := factors[0]
	b.WriteString(encode83(linearToSRGB(dc[0])<<16|linearToSRGB(dc[1])<<8|linearToSRGB(dc[2]), 4))
	for _, f := range factors[1:] {
		q := func(v float64) int {
			return int(max(0, min(18, math.Floor(signPow(v/maxAC, 0.5)*9+9.5))))
		}
		b.WriteString(encode83(q(f[0])*19*19+q(f[1])*19+q(f[2]), 2))
	}
	return b.String()
}

// linearPixels returns img's RGB in linear light, three floats a pixel.
func linearPixels(img *image.NRGBA) []float64 {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	var table [256]float64
	for i := range table {
		table[i] = srgbToLinear(i)
	}
	out := make([]float64, 0, 3*w*h)
	for y := range h {
		row := img.Pix[y*img.Stride:]
		for x := range w {
			out = append(out, table[row[4*x]], table[row[4*x+1]], table[row[4*x+2]])
		}
	}
	return out
}

func srgbToLinear(v int) float64 {
	f := float64(v) / 255
	if f <= 0.04045 {
		return f / 12.92
	}
	return math.Pow((f+0.055)/1.055, 2.4)
}

func linearToSRGB(v float64) int {
	v = max(0, min(1, v))
	if v <= 0.0031308 {
		return int(v*12.92*255 + 0.5)
	}
	return int((1.055*math.Pow(v, 1/2.4)-0.055)*255 + 0.5)
}

func signPow(v, exp float64) float64 {
	return math.Copysign(math.Pow(math.Abs(v), exp), v)
}

func encode83(v, length int) string {
	b := make([]byte, length)
	for i := length - 1; i >= 0; i-- {
		b[i] = base83[v%83]
		v /= 83
	}
	return string(b)
}
