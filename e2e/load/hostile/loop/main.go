// Command loop is a hostile guest of e2e/load/hostile.sh: a transformation
// that spins until the host stops it at its timeout (the default 2 s, as its
// manifest sets none). It reads the pixels first, as any transformation does.
package main

import (
	"image"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func init() {
	vitrine.Transformation(transform)
}

// main is not called: the module is a reactor, and init registers the work.
func main() {}

// sink keeps the loop's work observable, so the compiler cannot drop it.
var sink uint32

func transform(img *image.NRGBA, _ vitrine.Params) (*image.NRGBA, error) {
	for i := 0; ; i++ {
		sink += uint32(img.Pix[i%len(img.Pix)])
	}
}
