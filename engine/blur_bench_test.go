package engine

import "testing"

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
