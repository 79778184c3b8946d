package filters

import (
	"context"
	"image"
	"testing"
)

var benchSizes = []struct {
	name string
	w, h int
}{{"1MP", 1000, 1000}, {"12MP", 4000, 3000}}

// BenchmarkCheckoutCopy measures what the host adds around a guest's own
// work: an instance checked out of the pool, the pixels copied into the
// guest (pixels_read) and its output copied back out (pixels_write), for a
// guest that does nothing else.
func BenchmarkCheckoutCopy(b *testing.B) {
	dir := b.TempDir()
	kit(b, dir, "copy", KindTransformation, "copy", map[string]any{"limits": map[string]any{"memoryMB": 256, "timeoutMs": 60000}})
	h := newHost(b, dir, nil)
	tr, _ := h.Current().Transformation("copy")
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			img := testImage(sz.w, sz.h, 1)
			if _, err := tr.Transform(context.Background(), img, nil, nil); err != nil { // warm the instance
				b.Fatal(err)
			}
			b.SetBytes(int64(len(img.Pix)))
			b.ResetTimer()
			stop := cpuMeter(b)
			for i := 0; i < b.N; i++ {
				if _, err := tr.Transform(context.Background(), img, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
		// The engine's path: the output handed over as a view of the
		// guest's memory (TransformTo), which the engine copies straight
		// into libvips; that copy is in the engine's BenchmarkGuestCopy.
		b.Run("view/"+sz.name, func(b *testing.B) {
			img := testImage(sz.w, sz.h, 1)
			emit := func(*image.NRGBA) error { return nil }
			b.SetBytes(int64(len(img.Pix)))
			b.ResetTimer()
			stop := cpuMeter(b)
			for i := 0; i < b.N; i++ {
				if err := tr.TransformTo(context.Background(), img, nil, nil, emit); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
	}
}

// duotoneNative is the same code as testdata/duotone in native Go.
func duotoneNative(img *image.NRGBA, dark, light [3]uint8) *image.NRGBA {
	out := image.NewNRGBA(img.Rect)
	copy(out.Pix, img.Pix)
	var lut [3][256]uint8
	for c := 0; c < 3; c++ {
		for i := 0; i < 256; i++ {
			lut[c][i] = uint8((int(dark[c])*(255-i) + int(light[c])*i + 127) / 255)
		}
	}
	pix, n := out.Pix, len(out.Pix)
	for row := pix[:n]; len(row) >= 4; row = row[4:] {
		y := uint8((77*uint32(row[0]) + 150*uint32(row[1]) + 29*uint32(row[2]) + 128) >> 8)
		row[0], row[1], row[2] = lut[0][y], lut[1][y], lut[2][y]
	}
	return out
}

// BenchmarkDuotone runs the duotone guest against the same code in native
// Go; the guest's time includes the checkout and copies measured above.
func BenchmarkDuotone(b *testing.B) {
	dir := b.TempDir()
	writeFilter(b, dir, "duotone", guest(b, "duotone"), map[string]any{"kind": "transformation",
		"limits": map[string]any{"memoryMB": 256, "timeoutMs": 60000},
		"params": map[string]any{"dark": map[string]any{"type": "color", "default": "222222"},
			"light": map[string]any{"type": "color", "default": "eeeeee"}}})
	h := newHost(b, dir, nil)
	tr, _ := h.Current().Transformation("duotone")
	params, err := tr.CheckParams(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, sz := range benchSizes {
		img := testImage(sz.w, sz.h, 2)
		b.Run("guest/"+sz.name, func(b *testing.B) {
			want := duotoneNative(img, [3]uint8{0x22, 0x22, 0x22}, [3]uint8{0xee, 0xee, 0xee})
			out, err := tr.Transform(context.Background(), img, params, nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := range want.Pix {
				if out.Pix[i] != want.Pix[i] {
					b.Fatalf("guest and native differ at byte %d: %d vs %d", i, out.Pix[i], want.Pix[i])
				}
			}
			b.SetBytes(int64(len(img.Pix)))
			b.ResetTimer()
			stop := cpuMeter(b)
			for i := 0; i < b.N; i++ {
				if _, err := tr.Transform(context.Background(), img, params, nil); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
		// The engine's path: the output as a view (TransformTo), which the
		// engine copies into libvips (BenchmarkGuestCopy in the engine).
		b.Run("guest-view/"+sz.name, func(b *testing.B) {
			emit := func(*image.NRGBA) error { return nil }
			b.SetBytes(int64(len(img.Pix)))
			stop := cpuMeter(b)
			for i := 0; i < b.N; i++ {
				if err := tr.TransformTo(context.Background(), img, params, nil, emit); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
		b.Run("native/"+sz.name, func(b *testing.B) {
			b.SetBytes(int64(len(img.Pix)))
			stop := cpuMeter(b)
			for i := 0; i < b.N; i++ {
				duotoneNative(img, [3]uint8{0x22, 0x22, 0x22}, [3]uint8{0xee, 0xee, 0xee})
			}
			stop()
		})
	}
}
