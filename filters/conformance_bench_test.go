//go:build unix

package filters

import (
	"context"
	"testing"
)

// BenchmarkSDKDuotone runs each language's duotone on a 1-megapixel image
// in the host: the cost of the same per-pixel loop in each SDK's language,
// in CPU time (cpu-ns/op), which a busy machine disturbs less than wall time.
func BenchmarkSDKDuotone(b *testing.B) {
	in := testImage(1000, 1000, 3)
	for _, lang := range sdkLangs {
		b.Run(lang.name, func(b *testing.B) {
			if why := lang.toolchain(); why != "" {
				b.Skip(why)
			}
			set, name := loadSDKExample(b, lang, "duotone", nil, nil)
			tr, _ := set.Transformation(name)
			params, err := tr.CheckParams(map[string]string{"dark": "203060", "light": "ffe0a0", "mix": "0.8"})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			defer cpuMeter(b)()
			for range b.N {
				if _, err := tr.Transform(context.Background(), in, params, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
