package engine

import (
	"context"
	"image"
	"image/color"
	"slices"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// animFrames, animDelays and animLoop describe the test animation.
const (
	animFrames = 10
	animLoop   = 3
	animW      = 40
	animH      = 30
)

var animDelays = []int{100, 110, 120, 130, 140, 150, 160, 170, 180, 190}

// animColour is frame i's background: a ramp of reds, greens and blues, so
// that every frame is told apart (and its order checked) by its centre
// pixel, in colour and in grey (lossy WebP merges frames it finds equal).
func animColour(i int) color.NRGBA {
	return color.NRGBA{R: uint8(30 + 20*i), G: uint8(20 + 10*i), B: 60, A: 255}
}

// animatedSource encodes the 10-frame test animation (40x30 frames, a white
// block in each frame's top-left corner) as ext (gif or webp).
func animatedSource(t testing.TB, ext string) []byte {
	t.Helper()
	strip := image.NewNRGBA(image.Rect(0, 0, animW, animH*animFrames))
	for i := 0; i < animFrames; i++ {
		for y := 0; y < animH; y++ {
			for x := 0; x < animW; x++ {
				c := animColour(i)
				if x < 10 && y < 8 {
					c = color.NRGBA{255, 255, 255, 255}
				}
				strip.SetNRGBA(x, i*animH+y, c)
			}
		}
	}
	ref, err := vips.NewImageFromGoImage(strip)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, step := range []func() error{
		func() error { return ref.ExtractBand(0, 3) },
		func() error { return ref.SetPages(animFrames) },
		func() error { return ref.SetPageHeight(animH) },
		func() error { return ref.SetPageDelay(animDelays) },
		func() error { return ref.SetLoop(animLoop) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	if ext == "gif" {
		out, _, err = ref.ExportGIF(vips.NewGifExportParams())
	} else {
		p := vips.NewWebpExportParams()
		p.Lossless = true
		out, _, err = ref.ExportWebp(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loadAnimation decodes every frame of data.
func loadAnimation(t *testing.T, data []byte) *vips.ImageRef {
	t.Helper()
	p := vips.NewImportParams()
	p.NumPages.Set(-1)
	ref, err := vips.LoadImageFromBuffer(data, p)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestAnimationKeepsFrames(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	cases := []struct {
		chain  []string
		w, h   int
		grey   bool
		centre func(w, h int) (int, int) // where the frame colour shows
	}{
		{[]string{"resize:width=20"}, 20, 15, false, nil},
		{[]string{"crop:width=20,height=10,x=15,y=10"}, 20, 10, false, nil},
		{[]string{"thumbnail:width=16,height=16"}, 16, 16, false, nil},
		{[]string{"thumbnail:width=16,height=16,gravity=attention"}, 16, 16, false, nil},
		{[]string{"text:text=Hi,size=8,color=fff,gravity=southeast"}, 40, 30, false, nil},
		{[]string{"rotate:angle=90"}, 30, 40, false, nil},
		{[]string{"border:width=3,height=2,color=000"}, 46, 34, false, nil},
		{[]string{"desaturate"}, 40, 30, true, nil},
		{[]string{"flipVertically", "canvas:width=50,height=40,mode=center"}, 50, 40, false, nil},
		{[]string{"maxSize:width=30", "modulate:b=100,s=100,h=100", "strip"}, 30, 23, false, nil},
	}
	for _, src := range []string{"gif", "webp"} {
		data := animatedSource(t, src)
		for _, out := range []string{"gif", "webp"} {
			for _, c := range cases {
				t.Run(src+">"+out+"/"+c.chain[0], func(t *testing.T) {
					res := run(t, e, data, out, Env{}, c.chain...)
					if res.Ext != out || res.Width != c.w || res.Height != c.h {
						t.Fatalf("result %s %dx%d, want %s %dx%d", res.Ext, res.Width, res.Height, out, c.w, c.h)
					}
					ref := loadAnimation(t, res.Data)
					defer ref.Close()
					if n := ref.Pages(); n != animFrames {
						t.Fatalf("%d frames, want %d", n, animFrames)
					}
					if ref.PageHeight() != c.h || ref.Width() != c.w || ref.Height() != c.h*animFrames {
						t.Fatalf("strip %dx%d, page height %d, want %dx%d frames", ref.Width(), ref.Height(), ref.PageHeight(), c.w, c.h)
					}
					if d, _ := ref.PageDelay(); !slices.Equal(d, animDelays) {
						t.Errorf("delays %v, want %v", d, animDelays)
					}
					if l := ref.Loop(); l != animLoop {
						t.Errorf("loop %d, want %d", l, animLoop)
					}
					// Each frame keeps its own picture, in order.
					pix := decodeStrip(t, ref)
					for i := 0; i < animFrames; i++ {
						got := pix.NRGBAAt(c.w*3/4, i*c.h+c.h*3/4)
						want := animColour(i)
						if c.grey {
							if abs(int(got.R)-int(got.B)) > 6 {
								t.Errorf("frame %d: %v is not grey", i, got)
							}
							continue
						}
						if !near(got, want, 24) {
							t.Errorf("frame %d: %v, want about %v", i, got, want)
						}
					}
				})
			}
		}
	}
}

// decodeStrip returns the RGBA pixels of an animation strip.
func decodeStrip(t *testing.T, ref *vips.ImageRef) *image.NRGBA {
	t.Helper()
	c, err := ref.Copy()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetPages(1); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPageHeight(c.Height()); err != nil {
		t.Fatal(err)
	}
	png, _, err := c.ExportPng(vips.NewPngExportParams())
	if err != nil {
		t.Fatal(err)
	}
	return decodeRGBA(t, png)
}

func TestAnimationStill(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	data := animatedSource(t, "gif")
	for _, c := range []struct {
		format string
		chain  []string
	}{
		{"png", []string{"resize:width=20"}},
		{"jpg", nil},
		{"gif", []string{"histogram"}}, // per frame makes no sense: the first frame
	} {
		res := run(t, e, data, c.format, Env{}, c.chain...)
		ref := mustLoad(t, res.Data)
		if n := ref.Pages(); n != 1 {
			t.Errorf("%s %v: %d frames, want a still", c.format, c.chain, n)
		}
		ref.Close()
	}
}

func TestAnimationLimits(t *testing.T) {
	t.Parallel()
	data := animatedSource(t, "gif")
	cases := []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"frames", Config{Limits: Limits{MaxFrames: 9}}, "Too many animation frames: 10 (the limit is 9)"},
		{"pixels", Config{Limits: Limits{MaxAnimationPixels: 40*30*10 - 1}}, "Animation too large: 10 frames of 40x30 are 12000 pixels (the limit is 11999)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEngine(t, c.cfg)
			if _, err := e.Probe(data); KindOf(err) != KindTooLarge || err.Error() != c.msg {
				t.Errorf("Probe: %v, want %q", err, c.msg)
			}
			if _, err := e.Inspect(context.Background(), data); KindOf(err) != KindTooLarge {
				t.Errorf("Inspect: %v", err)
			}
			chain, _ := e.ParseChain([]string{"resize:width=20"})
			_, err := e.Process(context.Background(), data, Request{Chain: chain, Format: "gif",
				Source: Info{Mime: "image/gif", Ext: "gif", Width: animW, Height: animH}})
			if KindOf(err) != KindTooLarge || err.Error() != c.msg {
				t.Errorf("Process: %v, want %q", err, c.msg)
			}
		})
	}
	// A chain that enlarges the frames past the limit stops too.
	e := newTestEngine(t, Config{Limits: Limits{MaxAnimationPixels: 40 * 30 * 10 * 2}})
	chain, _ := e.ParseChain([]string{"resize:width=80"})
	if _, err := e.Process(context.Background(), data, Request{Chain: chain, Format: "gif"}); KindOf(err) != KindTooLarge {
		t.Errorf("enlarged past the limit: %v", err)
	}
}
