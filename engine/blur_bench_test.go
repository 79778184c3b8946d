package engine

import (
	"context"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// The blur benchmarks use the golden tests' parameters (TestEffectsGolden):
// JPEG in and out, 1080p and 12 MP.

func BenchmarkBlurMotion(b *testing.B) {
	benchProcess(b, "blur:mode=motion,radius=10,sigma=5,angle=30")
}

func BenchmarkBlurRadial(b *testing.B) { benchProcess(b, "blur:type=radial,angle=20") }

func BenchmarkBlurAdaptive(b *testing.B) { benchProcess(b, "blur:type=adaptive,radius=6,sigma=3") }

func BenchmarkBlurGaussian(b *testing.B) { benchProcess(b, "blur:radius=6,sigma=3") }

// BenchmarkBlurBaseline is the decode and encode the blur benchmarks include.
func BenchmarkBlurBaseline(b *testing.B) { benchProcess(b, "compress:level=80") }

// The step benchmarks measure a blur alone: the source decoded once into
// memory, then per operation the blur and the rendering of its result into
// memory, on one thread (the engine runs each pipeline at libvips
// concurrency 1). No decode, no encode.

func BenchmarkBlurStepMotion(b *testing.B) {
	benchStep(b, "blur:mode=motion,radius=10,sigma=5,angle=30")
}

func BenchmarkBlurStepRadial(b *testing.B) { benchStep(b, "blur:type=radial,angle=20") }

func BenchmarkBlurStepAdaptive(b *testing.B) { benchStep(b, "blur:type=adaptive,radius=6,sigma=3") }

func benchStep(b *testing.B, spec string) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			e := newTestEngine(b, Config{})
			c, err := e.ParseChain([]string{spec})
			if err != nil {
				b.Fatal(err)
			}
			src, err := vips.NewImageFromBuffer(benchJPEG(b, size.w, size.h))
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			if err := copyMemory(src); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				img, err := src.Copy()
				if err != nil {
					b.Fatal(err)
				}
				s := &State{Ctx: context.Background(), Image: img, Output: &Output{}, engine: e}
				err = c.steps[0].Apply(s)
				if err == nil {
					err = copyMemory(s.Image)
				}
				s.Image.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
