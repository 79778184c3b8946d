package engine

import (
	"bytes"
	"image"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestMotionU8MatchesConvolution: the direct 8-bit motion blur gives the
// same pixels as the libvips convolution it replaces (run on a float copy
// of the image, which takes that path), within rounding, at angles in
// every quadrant and along the axes, on noise (the hardest case). The
// weights in 256ths move a pixel by about half a level on average.
func TestMotionU8MatchesConvolution(t *testing.T) {
	t.Parallel()
	const w, h = 97, 61
	r := rand.New(rand.NewPCG(7, 7))
	noise := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range noise.Pix {
		noise.Pix[i] = byte(r.UintN(256))
		if i%4 == 3 {
			noise.Pix[i] = 255
		}
	}
	load := func() *vips.ImageRef {
		img, err := vips.NewImageFromGoImage(noise)
		if err != nil {
			t.Fatal(err)
		}
		if err := img.ExtractBand(0, 3); err != nil {
			t.Fatal(err)
		}
		return img
	}
	for _, angle := range []float64{0, 30, 90, 135, 200, 300, -45} {
		for _, rs := range [][2]float64{{10, 5}, {3, 2}, {40, 30}} {
			b := blur{kind: "motion", radius: rs[0], sigma: rs[1], angle: angle}
			fast := &State{Image: load()}
			slow := &State{Image: load()}
			if err := slow.Image.Cast(vips.BandFormatFloat); err != nil {
				t.Fatal(err)
			}
			if err := b.motion(fast); err != nil {
				t.Fatal(err)
			}
			if err := b.motion(slow); err != nil {
				t.Fatal(err)
			}
			if err := castTo(slow.Image, vips.BandFormatUchar); err != nil {
				t.Fatal(err)
			}
			a, err := fast.Image.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			c, err := slow.Image.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(c) || fast.Image.Width() != w || fast.Image.Height() != h {
				t.Fatalf("angle %v: %dx%d, %d vs %d bytes", angle, fast.Image.Width(), fast.Image.Height(), len(a), len(c))
			}
			worst, sum := 0, 0
			for i := range a {
				d := int(a[i]) - int(c[i])
				if d < 0 {
					d = -d
				}
				worst = max(worst, d)
				sum += d
			}
			if mean := float64(sum) / float64(len(a)); worst > 4 || mean > 1 {
				t.Errorf("angle %v radius %v sigma %v: differs by up to %d (mean %.2f)", angle, rs[0], rs[1], worst, mean)
			}
			fast.Image.Close()
			slow.Image.Close()
		}
	}
}

// TestRadialFormatsAgree: the rotational blur gives the same pixels for an
// image held as uchar, as ushort (scaled by 257) and as float (the path of
// images with alpha, blurred premultiplied), within rounding.
func TestRadialFormatsAgree(t *testing.T) {
	t.Parallel()
	src := testPicture(90, 70, false)
	b := blur{kind: "radial", angle: 40}
	run := func(format vips.BandFormat, scale float64) []byte {
		t.Helper()
		img, err := vips.NewImageFromGoImage(src)
		if err != nil {
			t.Fatal(err)
		}
		defer img.Close()
		steps := []func() error{
			func() error { return img.ExtractBand(0, 3) },
			func() error { return img.Linear1(scale, 0) },
			func() error { return img.Cast(format) },
			func() error { return b.radial(&State{Image: img}) },
			func() error { return img.Linear1(1/scale, 0.5) },
			func() error { return img.Cast(vips.BandFormatUchar) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		if img.Width() != 90 || img.Height() != 70 {
			t.Fatalf("%v: %dx%d", format, img.Width(), img.Height())
		}
		pix, err := img.ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		return pix
	}
	want := run(vips.BandFormatUchar, 1)
	for _, f := range []struct {
		format vips.BandFormat
		scale  float64
	}{{vips.BandFormatUshort, 257}, {vips.BandFormatFloat, 1}} {
		got := run(f.format, f.scale)
		for i := range want {
			if d := int(got[i]) - int(want[i]); d < -1 || d > 1 {
				t.Fatalf("%v: sample %d is %d, uchar gives %d", f.format, i, got[i], want[i])
			}
		}
	}
}

// TestBlurKernelsTinyImages: the direct kernels handle images narrower and
// shorter than their taps (every column an edge column).
func TestBlurKernelsTinyImages(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{1, 1}, {1, 9}, {9, 1}, {2, 3}} {
		for _, b := range []blur{{kind: "motion", radius: 10, sigma: 5, angle: 30}, {kind: "radial", angle: 90}, {kind: "adaptive", radius: 6, sigma: 3}} {
			img, err := vips.NewImageFromGoImage(testPicture(size[0], size[1], false))
			if err != nil {
				t.Fatal(err)
			}
			s := &State{Ctx: t.Context(), Image: img}
			if err := img.ExtractBand(0, 3); err != nil {
				t.Fatal(err)
			}
			if err := b.Apply(s); err != nil {
				t.Fatalf("%s on %dx%d: %v", b.kind, size[0], size[1], err)
			}
			if _, err := s.Image.ToBytes(); err != nil || s.Image.Width() != size[0] || s.Image.Height() != size[1] {
				t.Fatalf("%s on %dx%d: %dx%d, %v", b.kind, size[0], size[1], s.Image.Width(), s.Image.Height(), err)
			}
			s.Image.Close()
		}
	}
}

// TestAdaptiveU8MatchesOperations: the fused 8-bit adaptive blur gives the
// pixels of the same steps as libvips operations (the path of other
// formats), within rounding, for small and large masks (narrow and wide
// weights), colour and grey: the integer weights and the tabulated grey move
// a few pixels by a few levels, the mean by under one.
func TestAdaptiveU8MatchesOperations(t *testing.T) {
	t.Parallel()
	const w, h = 120, 90
	r := rand.New(rand.NewPCG(3, 9))
	src := testPicture(w, h, false)
	for i := range src.Pix {
		if i%4 != 3 {
			src.Pix[i] = clamp8(int(src.Pix[i]) + int(r.UintN(41)) - 20)
		}
	}
	for _, grey := range []bool{false, true} {
		for _, rs := range [][2]float64{{6, 3}, {2, 1}, {0, 2}, {30, 10}, {0, 20}, {100, 40}, {100, 100}, {1, 1e-7}} {
			b := blur{kind: "adaptive", radius: rs[0], sigma: rs[1]}
			load := func() *vips.ImageRef {
				img, err := vips.NewImageFromGoImage(src)
				if err == nil {
					err = img.ExtractBand(0, 3)
				}
				if err == nil && grey {
					err = img.ToColorSpace(vips.InterpretationBW)
				}
				if err != nil {
					t.Fatal(err)
				}
				return img
			}
			fast, slow := load(), load()
			if err := b.adaptive(fast); err != nil {
				t.Fatal(err)
			}
			if err := b.adaptiveOps(slow); err != nil {
				t.Fatal(err)
			}
			if err := castTo(slow, vips.BandFormatUchar); err != nil {
				t.Fatal(err)
			}
			a, err := fast.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			c, err := slow.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(c) || len(a) != w*h*fast.Bands() {
				t.Fatalf("grey %v: %d vs %d bytes", grey, len(a), len(c))
			}
			worst, sum := 0, 0
			for i := range a {
				d := int(a[i]) - int(c[i])
				worst, sum = max(worst, d, -d), sum+max(d, -d)
			}
			if mean := float64(sum) / float64(len(a)); worst > 5 || mean > 0.6 {
				t.Errorf("grey %v radius %v sigma %v: differs by up to %d (mean %.2f)", grey, rs[0], rs[1], worst, mean)
			} else {
				t.Logf("grey %v radius %v sigma %v: up to %d, mean %.2f", grey, rs[0], rs[1], worst, mean)
			}
			fast.Close()
			slow.Close()
		}
	}
}

// TestBlurStreamsFromSequentialDecode: every blur declares that it reads
// top to bottom, so a chain of blurs decodes with sequential access.
// Through Engine.Process, on a tall image, every path must hold that (a
// read out of order fails the request): the kernels, and the libvips
// operations of images with alpha or 16 bits, with masks several hundred
// rows tall.
func TestBlurStreamsFromSequentialDecode(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	const w, h = 240, 1400
	flat := testPicture(w, h, false)
	deep := image.NewNRGBA64(flat.Rect)
	for y := range h {
		for x := range w {
			deep.Set(x, y, flat.At(x, y))
		}
	}
	sources := []struct {
		name, mime, ext string
		data            []byte
	}{
		{"jpeg", "image/jpeg", "jpg", encodePicture(t, flat, "jpg")},
		{"png with alpha", "image/png", "png", encodePicture(t, testPicture(w, h, true), "png")},
		{"16-bit png", "image/png", "png", encodePicture(t, deep, "png")},
	}
	for _, spec := range []string{"blur:type=motion,radius=100,sigma=50,angle=80", "blur:type=radial,angle=30",
		"blur:type=adaptive,radius=6,sigma=3", "blur:radius=100,sigma=50"} {
		c, err := e.ParseChain([]string{spec})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.steps[0].(streamer); !ok {
			t.Fatalf("%s: does not stream", spec)
		}
		for _, src := range sources {
			req := Request{Chain: c, Format: src.ext, Source: Info{Mime: src.mime, Ext: src.ext, Width: w, Height: h}}
			res, err := e.Process(t.Context(), src.data, req)
			if err != nil {
				t.Fatalf("%s on %s: %v", spec, src.name, err)
			}
			if res.Width != w || res.Height != h {
				t.Fatalf("%s on %s: %dx%d", spec, src.name, res.Width, res.Height)
			}
		}
	}
}

// TestRadialGrid: the rotational blur's polar grid stays within a pixel of
// arc per angle at the farthest corner whatever the angle (a tiny angle
// once asked for 16 * 360 / angle angles: millions), keeps three pixels per
// angle for ordinary ones, and skips angles that move no pixel by a pixel.
func TestRadialGrid(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{4000, 3000}, {160, 120}, {1, 1}, {3, 2000}} {
		rmax := math.Hypot(float64(size[0])/2, float64(size[1])/2)
		for _, angle := range []float64{0, 0.0001, 0.01, 0.05, 1, 20, 90, 360, -45} {
			_, _, na, nr, k, ok := radialGrid(size[0], size[1], angle)
			arc := math.Abs(angle) * math.Pi / 180 * rmax
			switch {
			case ok != (arc >= 1):
				t.Errorf("%v on %v: ok %v with an arc of %.3f px", angle, size, ok, arc)
			case !ok:
			case float64(na) > math.Ceil(2*math.Pi*rmax) || k < 3 || k%2 == 0 || k > na+1 || nr < int(rmax)+2:
				t.Errorf("%v on %v: na %d (circle %.0f px), nr %d, k %d", angle, size, na, 2*math.Pi*rmax, nr, k)
			}
		}
	}
	if _, _, na, _, k, _ := radialGrid(4000, 3000, 20); na != 5236 || k != 291 {
		t.Errorf("20 degrees on 12 MP: na %d, k %d; want 5236, 291 (three pixels of arc per angle)", na, k)
	}
}

// TestBlurKernelsWriteEveryPixel: the kernels write their output into
// pooled buffers that held other images before, so a pixel they skipped
// would show another image's pixels. Each runs twice, once with every idle
// buffer of the pool filled with 0x00 and once with 0xff: the outputs must
// be identical. (Not parallel: the pool is shared.)
func TestBlurKernelsWriteEveryPixel(t *testing.T) {
	if exactBuffers {
		t.Skip("pixel buffers are exact allocations under -asan, not pooled")
	}
	for _, size := range [][2]int{{37, 23}, {1, 5}, {64, 64}, {200, 3}} {
		for _, b := range []blur{{kind: "motion", radius: 10, sigma: 5, angle: 30}, {kind: "radial", angle: 33},
			{kind: "adaptive", radius: 6, sigma: 3}} {
			var outs [2][]byte
			for i, fill := range []byte{0x00, 0xff} {
				bufs := make([]func(), 4)
				for j := range bufs {
					buf, free, err := pixels.get(size[0] * size[1] * 3)
					if err != nil {
						t.Fatal(err)
					}
					for k := range buf[:cap(buf)] {
						buf[:cap(buf)][k] = fill
					}
					bufs[j] = free
				}
				for _, free := range bufs {
					free()
				}
				img, err := vips.NewImageFromGoImage(testPicture(size[0], size[1], false))
				if err == nil {
					err = img.ExtractBand(0, 3)
				}
				if err == nil {
					err = b.Apply(&State{Ctx: t.Context(), Image: img})
				}
				if err != nil {
					t.Fatal(err)
				}
				if outs[i], err = img.ToBytes(); err != nil {
					t.Fatal(err)
				}
				img.Close()
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Errorf("%s on %dx%d: output depends on what the pooled buffer held", b.kind, size[0], size[1])
			}
		}
	}
}
