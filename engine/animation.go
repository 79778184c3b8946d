package engine

import (
	"context"
	"fmt"

	"github.com/davidbyttow/govips/v2/vips"
)

// Animated GIF and WebP sources keep every frame, their delays and their loop
// count when the output is GIF or WebP: libvips loads all frames as one tall
// strip (n=-1, with a page height), and the chain runs on each frame as an
// image of its own, so that every step's geometry (crop offsets, rotation
// centres, borders) applies to a frame and not to the strip. The frames are
// joined again and written as an animated GIF or WebP. Other output formats,
// and chains holding a step that makes no sense per frame (histogram), work
// on the first frame and answer a still image, as before.
//
// Decoding every frame costs memory and time in proportion to the frames,
// so the frame count and the pixels of all frames together are limited
// (Config.MaxFrames, Config.MaxAnimationPixels), checked from the header
// before any pixel is decoded, at upload and again when transforming.

// stillOnly is implemented by steps that make no sense per frame: a chain
// holding one works on the first frame of an animation.
type stillOnly interface {
	stillOnly()
}

// animation is an animated source opened for the chain.
type animation struct {
	strip *vips.ImageRef // all frames, top to bottom
	w, h  int            // one frame
	n     int            // frames
	delay []int          // milliseconds per frame
	loop  int            // 0 = for ever
	ext   string
}

// checkFrames enforces the animation limits for n frames of w x h.
func (e *Engine) checkFrames(w, h, n int) error {
	if n <= 1 {
		return nil
	}
	if n > e.cfg.MaxFrames {
		return &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("Too many animation frames: %d (the limit is %d)", n, e.cfg.MaxFrames)}
	}
	if total := int64(w) * int64(h) * int64(n); total > e.cfg.MaxAnimationPixels {
		return &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("Animation too large: %d frames of %dx%d are %d pixels (the limit is %d)",
			n, w, h, total, e.cfg.MaxAnimationPixels)}
	}
	return nil
}

// outputFormat is the format Process will write: the request's, else the
// chain's last convert, else the source's.
func outputFormat(req Request, src string) string {
	if req.Format != "" {
		return req.Format
	}
	out := src
	for _, st := range req.Chain.steps {
		if c, ok := st.(*convert); ok {
			out = c.format
		}
	}
	return out
}

// openAnimation returns the animation to process for src, or nil when src is
// a still image, the output format cannot animate, or the chain wants one
// frame.
func (e *Engine) openAnimation(src []byte, req Request) (*animation, error) {
	f, ok := sniff(src)
	if !ok || (f.ext != "gif" && f.ext != "webp") {
		return nil, nil
	}
	if out := outputFormat(req, f.ext); out != "gif" && out != "webp" {
		return nil, nil
	}
	for _, st := range req.Chain.steps {
		if _, ok := st.(stillOnly); ok {
			return nil, nil
		}
	}
	hdr, err := vips.LoadImageFromBuffer(src, &vips.ImportParams{})
	if err != nil {
		return nil, invalidImage(err)
	}
	w, h, n := hdr.Width(), hdr.Height(), hdr.Pages()
	hdr.Close()
	if n <= 1 {
		return nil, nil
	}
	if err := e.checkSize(w, h); err != nil {
		return nil, err
	}
	if err := e.checkFrames(w, h, n); err != nil {
		return nil, err
	}
	p := &vips.ImportParams{}
	p.FailOnError.Set(false)
	p.NumPages.Set(-1)
	strip, err := vips.LoadImageFromBuffer(src, p)
	if err != nil {
		return nil, invalidImage(err)
	}
	a := &animation{strip: strip, w: w, h: h, n: n, loop: strip.Loop(), ext: f.ext}
	if strip.Width() != w || strip.PageHeight() != h || strip.Height() != h*n {
		strip.Close()
		return nil, invalidImage(fmt.Errorf("animation strip %dx%d, page height %d, for %d frames of %dx%d",
			strip.Width(), strip.Height(), strip.PageHeight(), n, w, h))
	}
	if a.delay, err = strip.PageDelay(); err != nil || len(a.delay) != n {
		a.delay = nil // libvips' default delay then applies
	}
	if err := toWorkingColour(strip); err != nil {
		strip.Close()
		return nil, invalidImage(err)
	}
	// A GIF frame is decoded by replaying the frames before it: read
	// piecemeal by ten frame pipelines, the strip would be decoded over and
	// over. Decoded once into memory (at most MaxAnimationPixels), it is read.
	if err := copyMemory(strip); err != nil {
		strip.Close()
		return nil, invalidImage(err)
	}
	return a, nil
}

// processAnimation runs the chain on every frame of a and encodes the
// joined frames.
func (e *Engine) processAnimation(ctx context.Context, a *animation, req Request) (*Result, error) {
	defer a.strip.Close()
	// Every frame is computed from the strip: once ctx is done it gives
	// no more pixels, and each frame's work stops within a tile.
	defer stopOnCancel(ctx, a.strip)()
	out := &Output{Format: a.ext}
	headers := map[string]string{}
	frames := make([]*vips.ImageRef, 0, a.n)
	defer func() {
		for _, f := range frames {
			f.Close()
		}
	}()
	for i := 0; i < a.n; i++ {
		f, err := a.frame(i)
		if err != nil {
			return nil, err
		}
		s := &State{Ctx: ctx, Image: f, Env: req.Env, Output: out, OrigWidth: a.w, OrigHeight: a.h, Headers: headers, engine: e}
		err = e.runChain(s, req.Chain, a.n)
		frames = append(frames, s.Image)
		if err != nil {
			return nil, err
		}
		if f0 := frames[0]; s.Image.Width() != f0.Width() || s.Image.Height() != f0.Height() || s.Image.Bands() != f0.Bands() {
			return nil, fmt.Errorf("engine: animation frame %d is %dx%dx%d, frame 0 %dx%dx%d", i,
				s.Image.Width(), s.Image.Height(), s.Image.Bands(), f0.Width(), f0.Height(), f0.Bands())
		}
	}
	fw, fh := frames[0].Width(), frames[0].Height()
	joined, err := frames[0].Copy()
	if err != nil {
		return nil, err
	}
	s := &State{Ctx: ctx, Image: joined, Env: req.Env, Output: out, Headers: headers, engine: e}
	defer func() { s.Image.Close() }()
	if err := a.join(joined, frames[1:], fh); err != nil {
		return nil, fmt.Errorf("engine: join animation frames: %w", err)
	}
	if req.Format != "" {
		out.Format = req.Format
	}
	if err := e.finishMetadata(s); err != nil {
		return nil, err
	}
	return e.finish(s, fw, fh)
}

// frame returns frame i of the strip as an image of its own.
func (a *animation) frame(i int) (*vips.ImageRef, error) {
	f, err := a.strip.Copy()
	if err != nil {
		return nil, err
	}
	// One page: govips treats images with several pages specially (its
	// ExtractArea would crop every page of the strip).
	for _, step := range []func() error{
		func() error { return f.SetPages(1) },
		func() error { return f.SetPageHeight(a.h * a.n) },
		func() error { return f.ExtractArea(0, i*a.h, a.w, a.h) },
		func() error { return f.SetPageHeight(a.h) },
	} {
		if err := step(); err != nil {
			f.Close()
			return nil, fmt.Errorf("engine: animation frame %d: %w", i, err)
		}
	}
	return f, nil
}

// join appends rest below img (frame 0) and sets the animation's page
// height, frame count, delays and loop count on the result.
func (a *animation) join(img *vips.ImageRef, rest []*vips.ImageRef, fh int) error {
	if len(rest) > 0 {
		if err := img.ArrayJoin(rest, 1); err != nil {
			return err
		}
	}
	if err := img.SetPages(a.n); err != nil {
		return err
	}
	if err := img.SetPageHeight(fh); err != nil {
		return err
	}
	if a.delay != nil {
		if err := img.SetPageDelay(a.delay); err != nil {
			return err
		}
	}
	return img.SetLoop(a.loop)
}
