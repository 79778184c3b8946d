package engine

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"sync"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// Benchmarks run with b.RunParallel: GOMAXPROCS workers (the CPU count), like
// the in-process figures of e2e/README.md's Performance section. ops/s = 1e9 / ns/op.

var benchSources sync.Map // "WxH" -> []byte

// benchJPEG returns a q90 JPEG of a noisy gradient (noise keeps the file
// size realistic), generated once per size.
func benchJPEG(b *testing.B, w, h int) []byte {
	b.Helper()
	key := fmt.Sprintf("%dx%d", w, h)
	if v, ok := benchSources.Load(key); ok {
		return v.([]byte)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	seed := uint32(1)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			seed = seed*1664525 + 1013904223
			n := int(seed>>29) - 4
			img.SetNRGBA(x, y, color.NRGBA{
				R: clamp8(x*255/w + n), G: clamp8(y*255/h + n), B: clamp8((x+y)*127/(w+h) + 64 - n), A: 255,
			})
		}
	}
	data := encodePicture(b, img, "jpg")
	benchSources.Store(key, data)
	return data
}

func clamp8(v int) uint8 { return uint8(min(max(v, 0), 255)) }

var benchSizes = []struct {
	name string
	w, h int
}{{"1920x1080", 1920, 1080}, {"4000x3000", 4000, 3000}}

// benchProcess measures Engine.Process on ts, JPEG in and out.
func benchProcess(b *testing.B, ts ...string) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			src := benchJPEG(b, size.w, size.h)
			e := newTestEngine(b, Config{})
			c, err := e.ParseChain(ts)
			if err != nil {
				b.Fatal(err)
			}
			req := Request{Chain: c, Format: "jpg", Source: Info{Mime: "image/jpeg", Ext: "jpg", Width: size.w, Height: size.h}}
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := e.Process(context.Background(), src, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkThumbnail200(b *testing.B) { benchProcess(b, "thumbnail:width=200,height=200") }

func BenchmarkResizeWidth800(b *testing.B) { benchProcess(b, "resize:width=800") }

// BenchmarkThumbnail200Attention is BenchmarkThumbnail200 with libvips'
// attention smartcrop choosing the square.
func BenchmarkThumbnail200Attention(b *testing.B) {
	benchProcess(b, "thumbnail:width=200,height=200,gravity=attention")
}

// BenchmarkText draws a two-line caption with a box on the image.
func BenchmarkText(b *testing.B) {
	benchProcess(b, "text:text=vitrine\na caption,size=48,color=fff,background=000,padding=8,opacity=80,gravity=southwest,x=20,y=20")
}

func BenchmarkChain5(b *testing.B) {
	benchProcess(b, "maxSize:width=1200", "crop:width=800,height=600,mode=center",
		"border:width=4,height=4,color=fff", "flipHorizontally", "compress:level=75")
}

// BenchmarkCeiling does the same libvips work as the thumbnail and resize
// benchmarks by hand, without the engine: header read, JPEG shrink-on-load
// with sequential access, one Lanczos3 resize, a centre crop, q80 encode. It
// also measures vips_thumbnail_buffer. The engine's numbers are to be
// compared with these, measured in the same run.
func BenchmarkCeiling(b *testing.B) {
	handBuilt := func(src []byte, w, h int, crop bool) error {
		hdr, err := vips.LoadImageFromBuffer(src, &vips.ImportParams{})
		if err != nil {
			return err
		}
		W, H := hdr.Width(), hdr.Height()
		hdr.Close()
		var nw, nh int
		if crop { // outbound w x h
			if w*H > h*W {
				nw, nh = w, roundMin1(float64(w)*float64(H)/float64(W))
			} else {
				nw, nh = roundMin1(float64(h)*float64(W)/float64(H)), h
			}
		} else {
			nw, nh = w, ceilDiv(H*w, W)
		}
		p := &vips.ImportParams{}
		p.FailOnError.Set(false)
		p.Access.Set(vips.AccessSequential)
		if s := pickShrink(W, H, nw, nh); s > 1 {
			p.JpegShrinkFactor.Set(s)
		}
		img, err := vips.LoadImageFromBuffer(src, p)
		if err != nil {
			return err
		}
		defer img.Close()
		if err := img.ResizeWithVScale(float64(nw)/float64(img.Width()), float64(nh)/float64(img.Height()), vips.KernelLanczos3); err != nil {
			return err
		}
		if crop {
			if err := img.ExtractArea((img.Width()-w)/2, (img.Height()-h)/2, w, h); err != nil {
				return err
			}
		}
		_, _, err = img.ExportJpeg(&vips.JpegExportParams{Quality: 80})
		return err
	}
	thumbnailBuffer := func(src []byte, w, h int, _ bool) error {
		img, err := vips.NewThumbnailFromBuffer(src, w, h, vips.InterestingCentre)
		if err != nil {
			return err
		}
		defer img.Close()
		_, _, err = img.ExportJpeg(&vips.JpegExportParams{Quality: 80})
		return err
	}
	cases := []struct {
		name string
		f    func([]byte, int, int, bool) error
		w, h int
		crop bool
	}{
		{"handbuilt/thumbnail200", handBuilt, 200, 200, true},
		{"handbuilt/width800", handBuilt, 800, 0, false},
		{"vips_thumbnail_buffer/thumbnail200", thumbnailBuffer, 200, 200, true},
	}
	_ = startVips(nil)
	for _, tc := range cases {
		for _, size := range benchSizes {
			b.Run(tc.name+"/"+size.name, func(b *testing.B) {
				src := benchJPEG(b, size.w, size.h)
				b.ReportAllocs()
				b.SetBytes(int64(len(src)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := tc.f(src, tc.w, tc.h, tc.crop); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkGuestCopy measures what the engine adds around a guest step:
// copying a libvips image out as RGBA and the guest's output back in. The
// source is an image already in memory, so no decode is counted.
func BenchmarkGuestCopy(b *testing.B) {
	for _, mp := range []struct {
		name string
		w, h int
	}{{"1MP", 1000, 1000}, {"12MP", 4000, 3000}} {
		b.Run(mp.name, func(b *testing.B) {
			src, err := vips.NewImageFromGoImage(testPicture(mp.w, mp.h, true))
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			b.SetBytes(int64(4 * mp.w * mp.h))
			b.ResetTimer()
			stop := cpuMeter(b)
			defer stop()
			for i := 0; i < b.N; i++ {
				c, err := src.Copy()
				if err != nil {
					b.Fatal(err)
				}
				in, free, err := exportNRGBA(c)
				if err != nil {
					b.Fatal(err)
				}
				out, err := importGuestNRGBA(in, false)
				if err != nil {
					b.Fatal(err)
				}
				free()
				out.Close()
				c.Close()
			}
		})
	}
}
