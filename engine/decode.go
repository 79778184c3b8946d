package engine

import (
	"github.com/davidbyttow/govips/v2/vips"
)

// loadHinter is implemented by steps that reduce the image. loadHint returns
// the smallest size, in pixels, the step wants its input decoded at, given
// s.OrigWidth x s.OrigHeight and s.Env; (0, 0) means "no reduction". The
// engine then decodes JPEG and WebP at the largest scale-down (1/2, 1/4, 1/8)
// that keeps shrinkMargin times that size, and the step finishes with an exact
// resize computed from State.Size, so geometry is identical with or without
// shrink-on-load.
type loadHinter interface {
	loadHint(s *State) (minW, minH int)
}

// streamer is implemented by steps that read their input top to bottom, so a
// chain made only of them can decode with sequential access (less memory,
// better cache use). Steps that rotate, flip vertically or read arbitrary
// regions must not implement it.
type streamer interface {
	streams()
}

// shrinkMargin keeps the decoded image at least this many times the size the
// first step asks for. Why 1 and not vips_thumbnail's 2: libjpeg's scaled
// decode already averages each 8x8 block, and a margin of 2 decodes 4x the
// pixels for a 1080p source (full size for width 800), which was the gap to
// imgproxy (which keeps no margin either). Against a reference resized from the
// full-size decode, margin 1 costs 0.0001-0.017 luma SSIM on the q80 output
// (e2e/README.md, Performance); geometry is exact either way.
const shrinkMargin = 1

// Size returns the size the current image has in the chain's geometry: the
// image's own size, except for the first step after a shrink-on-load decode,
// where it is the size the image would have had without it. Steps compute
// their target sizes from Size, never from Image.Width/Height.
func (s *State) Size() (w, h int) {
	if s.loadW > 0 {
		return s.loadW, s.loadH
	}
	return s.Image.Width(), s.Image.Height()
}

// shrunk reports the factors actual/logical of the current image (1, 1
// unless the decode shrank it).
func (s *State) shrunk() (fx, fy float64) {
	if s.loadW <= 0 {
		return 1, 1
	}
	return float64(s.Image.Width()) / float64(s.loadW), float64(s.Image.Height()) / float64(s.loadH)
}

// pickShrink returns the largest JPEG/WebP load shrink (8, 4, 2 or 1) that
// keeps a w x h source at least shrinkMargin times minW x minH.
func pickShrink(w, h, minW, minH int) int {
	if minW <= 0 || minH <= 0 {
		return 1
	}
	for _, f := range []int{8, 4, 2} {
		if ceilDiv(w, f) >= minW*shrinkMargin && ceilDiv(h, f) >= minH*shrinkMargin {
			return f
		}
	}
	return 1
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// decoded is an opened source: the (possibly shrunk) image and the size its
// header declares.
type decoded struct {
	img  *vips.ImageRef
	w, h int
	ext  string
}

// decode opens src for the chain: it reads the header, checks the limits and,
// when the first step reduces the image, reopens a JPEG or WebP with
// shrink-on-load. Decoding is lenient (libvips' default): the stored bytes
// passed Inspect at upload. With from set, src is a variation of the stored
// image: the decoded image is smaller than the size reported (from's), as
// after a shrink-on-load, and the format reported is the original's.
func (e *Engine) decode(src []byte, steps []Step, env Env, from *VariationSource) (*decoded, error) {
	f, ok := sniff(src)
	if !ok {
		return nil, unsupported(src)
	}
	// Checked at upload, and again before every render: an SVG reaches
	// librsvg only as it passed the check.
	if err := checkInput(f, src); err != nil {
		return nil, err
	}
	seq := len(steps) > 0
	for _, st := range steps {
		if _, ok := st.(streamer); !ok {
			seq = false
			break
		}
	}
	params := func() *vips.ImportParams {
		p := e.loadParams(f, &vips.ImportParams{})
		p.FailOnError.Set(false)
		if seq {
			p.Access.Set(vips.AccessSequential)
		}
		return p
	}
	img, err := vips.LoadImageFromBuffer(src, params())
	if err != nil {
		return nil, invalidImage(err)
	}
	if seq && img.Orientation() > 1 {
		// The output policy rotates the result upright (metadata.go): a
		// rotation reads columns, which a sequential decode cannot give.
		img.Close()
		seq = false
		if img, err = vips.LoadImageFromBuffer(src, params()); err != nil {
			return nil, invalidImage(err)
		}
	}
	d := &decoded{img: img, w: img.Width(), h: img.Height(), ext: f.ext}
	if err := e.checkSize(d.w, d.h); err != nil {
		img.Close()
		return nil, err
	}
	if from != nil {
		d.w, d.h, d.ext = from.OrigWidth, from.OrigHeight, from.OrigExt
	}
	if len(steps) > 0 && (f.ext == "jpg" || f.ext == "webp") {
		if lh, ok := steps[0].(loadHinter); ok {
			minW, minH := lh.loadHint(&State{OrigWidth: d.w, OrigHeight: d.h, Env: env})
			if shrink := pickShrink(img.Width(), img.Height(), minW, minH); shrink > 1 {
				p := params()
				if f.ext == "jpg" {
					p.JpegShrinkFactor.Set(shrink)
				} else {
					p.WebpScaleFactor.Set(1 / float64(shrink))
				}
				small, err := vips.LoadImageFromBuffer(src, p)
				if err != nil {
					img.Close()
					return nil, invalidImage(err)
				}
				img.Close()
				d.img = small
			}
		}
	}
	if err := toWorkingColour(d.img); err != nil {
		d.img.Close()
		return nil, invalidImage(err)
	}
	return d, nil
}
