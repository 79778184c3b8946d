package vitrine

import (
	"fmt"
	"image"
	"math"
)

// pixelBuffer is the input buffer of the previous call, reused so that a
// module working on large images does not allocate (and wait for the garbage
// collector to free) a new one every call. The host copies the output when
// pixels_write returns, so reuse is safe even when the previous call returned
// its input.
var pixelBuffer []byte

// readPixels reads the call's input image straight into the Pix slice of the
// returned image: one copy, by the host.
func readPixels() (*image.NRGBA, error) {
	w := hostImageWidth()
	if w < 0 {
		return nil, codeError("image_width", w)
	}
	h := hostImageHeight()
	if h < 0 {
		return nil, codeError("image_height", h)
	}
	n, err := pixelLen(int(w), int(h))
	if err != nil {
		return nil, err
	}
	if cap(pixelBuffer) < n {
		pixelBuffer = nil // let the old buffer go before allocating the new one
		pixelBuffer = make([]byte, n)
	}
	pix := pixelBuffer[:n]
	got := hostPixelsRead(pix)
	if got < 0 {
		return nil, codeError("pixels_read", got)
	}
	if int(got) != n {
		return nil, fmt.Errorf("vitrine: pixels_read: %d bytes for a %dx%d image, want %d: %w", got, w, h, n, ErrInvalid)
	}
	return &image.NRGBA{Pix: pix, Stride: 4 * int(w), Rect: image.Rect(0, 0, int(w), int(h))}, nil
}

// writePixels sets img as the call's output.
func writePixels(img *image.NRGBA) error {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if w < 1 || h < 1 {
		return fmt.Errorf("vitrine: output image is %dx%d, want at least 1x1: %w", w, h, ErrInvalid)
	}
	if _, err := pixelLen(w, h); err != nil {
		return err
	}
	return status("pixels_write", hostPixelsWrite(int32(w), int32(h), packed(img)))
}

// pixelLen is the length of the pixels of a w x h image, if a wasm32 host call
// can carry it.
func pixelLen(w, h int) (int, error) {
	if w < 0 || h < 0 || w > math.MaxInt32 || h > math.MaxInt32 || int64(w)*int64(h) > math.MaxInt32/4 {
		return 0, fmt.Errorf("vitrine: a %dx%d image is too large: %w", w, h, ErrLimit)
	}
	return 4 * w * h, nil
}

// packed returns img's pixels as rows of 4*width bytes with no padding, the
// layout of the ABI. It returns a slice of img.Pix itself when img is already
// laid out so (any image the SDK read, or made with image.NewNRGBA), and
// copies only a sub-image whose rows are apart in memory.
func packed(img *image.NRGBA) []byte {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	row := 4 * w
	start := img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y)
	if img.Stride == row || h == 1 {
		return img.Pix[start : start+row*h]
	}
	out := make([]byte, row*h)
	for y := range h {
		copy(out[y*row:(y+1)*row], img.Pix[start+y*img.Stride:])
	}
	return out
}
