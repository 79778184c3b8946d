package engine

import (
	"cmp"
	"fmt"
	"image"
	"slices"
)

// Colours are img's average colour and up to n dominant colours (most
// frequent first), each "#rrggbb". Transparent pixels count by their
// alpha. The palette buckets colours by their 4 high bits per channel,
// takes the fullest buckets' mean colours, and drops a colour too close
// (within 48 in summed RGB difference) to one already taken.
func Colours(img *image.NRGBA, n int) (average string, palette []string) {
	type bucket struct {
		r, g, b, weight float64
	}
	buckets := map[int]*bucket{}
	var sr, sg, sb, sw float64
	w, h := img.Rect.Dx(), img.Rect.Dy()
	for y := range h {
		row := img.Pix[y*img.Stride:]
		for x := range w {
			p := row[4*x:]
			a := float64(p[3]) / 255
			if a == 0 {
				continue
			}
			r, g, b := float64(p[0]), float64(p[1]), float64(p[2])
			sr, sg, sb, sw = sr+r*a, sg+g*a, sb+b*a, sw+a
			key := int(p[0]>>4)<<8 | int(p[1]>>4)<<4 | int(p[2]>>4)
			bk := buckets[key]
			if bk == nil {
				bk = &bucket{}
				buckets[key] = bk
			}
			bk.r, bk.g, bk.b, bk.weight = bk.r+r*a, bk.g+g*a, bk.b+b*a, bk.weight+a
		}
	}
	if sw == 0 {
		return "#000000", []string{}
	}
	average = hexColour(sr/sw, sg/sw, sb/sw)
	list := make([]*bucket, 0, len(buckets))
	for _, bk := range buckets {
		bk.r, bk.g, bk.b = bk.r/bk.weight, bk.g/bk.weight, bk.b/bk.weight
		list = append(list, bk)
	}
	slices.SortFunc(list, func(a, b *bucket) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Compare(a.r*65536+a.g*256+a.b, b.r*65536+b.g*256+b.b)
	})
	var taken []*bucket
	for _, bk := range list {
		if len(taken) == n {
			break
		}
		if slices.ContainsFunc(taken, func(t *bucket) bool {
			return absf(t.r-bk.r)+absf(t.g-bk.g)+absf(t.b-bk.b) < 48
		}) {
			continue
		}
		taken = append(taken, bk)
	}
	palette = make([]string, len(taken))
	for i, t := range taken {
		palette[i] = hexColour(t.r, t.g, t.b)
	}
	return average, palette
}

func absf(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func hexColour(r, g, b float64) string {
	c := func(v float64) int { return int(min(255, max(0, v+0.5))) }
	return fmt.Sprintf("#%02x%02x%02x", c(r), c(g), c(b))
}
