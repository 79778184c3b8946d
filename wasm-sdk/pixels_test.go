package vitrine

import (
	"bytes"
	"errors"
	"image"
	"testing"
)

// numbered returns a w x h image whose bytes count up from 0, so that any
// misplaced byte shows.
func numbered(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	return img
}

func TestPacked(t *testing.T) {
	t.Parallel()
	full := numbered(5, 4)
	t.Run("whole image is not copied", func(t *testing.T) {
		t.Parallel()
		got := packed(full)
		if len(got) != len(full.Pix) || &got[0] != &full.Pix[0] {
			t.Errorf("packed copied the pixels of a packed image")
		}
	})
	t.Run("full-width rows are not copied", func(t *testing.T) {
		t.Parallel()
		sub := full.SubImage(image.Rect(0, 1, 5, 3)).(*image.NRGBA)
		got := packed(sub)
		if &got[0] != &full.Pix[4*5] || !bytes.Equal(got, full.Pix[4*5:4*5*3]) {
			t.Errorf("packed(rows 1-2) = %v, want a slice of the original", got)
		}
	})
	t.Run("sub-image is packed", func(t *testing.T) {
		t.Parallel()
		sub := full.SubImage(image.Rect(1, 1, 3, 3)).(*image.NRGBA)
		var want []byte
		for y := 1; y < 3; y++ {
			for x := 1; x < 3; x++ {
				o := full.PixOffset(x, y)
				want = append(want, full.Pix[o:o+4]...)
			}
		}
		if got := packed(sub); !bytes.Equal(got, want) {
			t.Errorf("packed(sub) = %v, want %v", got, want)
		}
	})
	t.Run("one row", func(t *testing.T) {
		t.Parallel()
		sub := full.SubImage(image.Rect(2, 3, 4, 4)).(*image.NRGBA)
		o := full.PixOffset(2, 3)
		if got := packed(sub); !bytes.Equal(got, full.Pix[o:o+8]) {
			t.Errorf("packed(row) = %v, want %v", got, full.Pix[o:o+8])
		}
	})
}

func TestPixelLen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		w, h int
		want int
		err  error
	}{
		{1, 1, 4, nil},
		{4000, 3000, 48_000_000, nil},
		{0, 10, 0, nil},
		{1 << 15, 1 << 14, 0, ErrLimit},
		{-1, 1, 0, ErrLimit},
	}
	for _, c := range cases {
		got, err := pixelLen(c.w, c.h)
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("pixelLen(%d, %d) = %d, %v; want %d, %v", c.w, c.h, got, err, c.want, c.err)
		}
	}
}

func TestWritePixelsRefusesEmpty(t *testing.T) {
	t.Parallel()
	if err := writePixels(image.NewNRGBA(image.Rect(0, 0, 0, 5))); !errors.Is(err, ErrInvalid) {
		t.Errorf("writePixels(0x5) = %v, want ErrInvalid", err)
	}
}
