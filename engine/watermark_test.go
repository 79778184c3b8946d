package engine

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"io/fs"
	"testing"
)

// watermarkEnv serves one 60x60 half-transparent green watermark as "wm".
func watermarkEnv(t *testing.T) Env {
	var buf bytes.Buffer
	mark := fxSolid(60, 60, fxRGBA(0, 255, 0, 255))
	for y := 30; y < 60; y++ {
		for x := 0; x < 60; x++ {
			mark.Pix[mark.PixOffset(x, y)+3] = 0 // bottom half transparent
		}
	}
	if err := png.Encode(&buf, mark); err != nil {
		t.Fatal(err)
	}
	return Env{LoadImage: func(_ context.Context, id string) ([]byte, error) {
		if id != "wm" {
			return nil, fmt.Errorf("image %s: %w", id, fs.ErrNotExist)
		}
		return buf.Bytes(), nil
	}}
}

func TestWatermark(t *testing.T) {
	red, green := fxRGBA(255, 0, 0, 255), fxRGBA(0, 255, 0, 255)
	// Behat: 60x60 on 665x463, center -> (302,201).
	s := fxState(t, fxSolid(665, 463, red))
	s.Env = watermarkEnv(t)
	if err := fxRun(t, s, "watermark:img=wm,position=center"); err != nil {
		t.Fatal(err)
	}
	px := fxPixels(t, s)
	assertPixels(t, px, []struct {
		x, y int
		want color.NRGBA
	}{{302, 201, green}, {301, 201, red}, {302, 200, red}, {361, 230, green}, {362, 230, red}, {330, 240, red}})

	for _, c := range []struct {
		spec string
		x, y int // where the watermark's top-left lands
	}{
		{"watermark:img=wm", 0, 0},
		{"watermark:img=wm,position=bottom-right,x=-10,y=-10", 90, 50},
		{"watermark:img=wm,position=top-right", 100, 0},
		{"watermark:img=wm,position=bottom", 50, 60},
		{"watermark:img=wm,position=left,x=-20", -20, 30},
		{"watermark:img=wm,width=30", 0, 0},
	} {
		s := fxState(t, fxSolid(160, 120, red))
		s.Env = watermarkEnv(t)
		if err := fxRun(t, s, c.spec); err != nil {
			t.Fatal(err)
		}
		px := fxPixels(t, s)
		if got := px.NRGBAAt(max(c.x, 0)+2, c.y+2); !fxNear(got, green, 10) {
			t.Errorf("%s: (%d,%d) = %v, want green", c.spec, c.x+2, c.y+2, got)
		}
		if c.x > 0 {
			if got := px.NRGBAAt(c.x-1, c.y+2); !fxNear(got, red, 10) {
				t.Errorf("%s: left of the mark = %v, want red", c.spec, got)
			}
		}
		if px.Rect.Dx() != 160 || px.Rect.Dy() != 120 {
			t.Errorf("%s: size changed to %v", c.spec, px.Rect.Size())
		}
	}
	// width=30 scales the 60x60 mark to 30x30: its opaque half ends at y 15.
	s = fxState(t, fxSolid(160, 120, red))
	s.Env = watermarkEnv(t)
	if err := fxRun(t, s, "watermark:img=wm,width=30,opacity=50"); err != nil {
		t.Fatal(err)
	}
	px = fxPixels(t, s)
	if got := px.NRGBAAt(10, 5); !fxNear(got, fxRGBA(128, 128, 0, 255), 6) {
		t.Errorf("opacity 50: %v", got)
	}
	if got := px.NRGBAAt(10, 20); !fxNear(got, red, 6) {
		t.Errorf("below the scaled mark: %v", got)
	}
	if got := px.NRGBAAt(31, 5); !fxNear(got, red, 6) {
		t.Errorf("right of the scaled mark: %v", got)
	}
	// opacity=0 is fully transparent.
	s = fxState(t, fxSolid(16, 16, red))
	s.Env = watermarkEnv(t)
	if err := fxRun(t, s, "watermark:img=wm,opacity=0"); err != nil {
		t.Fatal(err)
	}
	if got := fxPixels(t, s).NRGBAAt(5, 5); got != red {
		t.Errorf("opacity 0: %v", got)
	}
}

func TestWatermarkErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"watermark":            "You must specify an image identifier to use for the watermark",
		"watermark:img=absent": "Watermark image not found",
	} {
		s := fxState(t, fxSolid(8, 8, fxRGBA(1, 2, 3, 255)))
		s.Env = watermarkEnv(t)
		err := fxRun(t, s, spec)
		if KindOf(err) != KindInvalid || err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%s: %v, want 400 %q", spec, err, want)
		}
	}
	// The configured default watermark is used when img is absent.
	s := fxState(t, fxSolid(80, 80, fxRGBA(255, 0, 0, 255)))
	s.Env = watermarkEnv(t)
	s.engine = &Engine{cfg: Config{DefaultWatermark: "wm"}}
	if err := fxRun(t, s, "watermark"); err != nil {
		t.Fatal(err)
	}
	if got := fxPixels(t, s).NRGBAAt(5, 5); !fxNear(got, fxRGBA(0, 255, 0, 255), 5) {
		t.Errorf("default watermark not drawn: %v", got)
	}
}
