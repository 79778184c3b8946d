package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// blur is one of ImageMagick's blurs, as Imbo offers them; `type` and `mode`
// are synonyms naming the kind (older clients send mode). The non-gaussian kinds are composed from
// libvips operations or, where libvips has none that fits, computed
// directly in C (blur_*.c; see each method).
type blur struct {
	kind                 string
	radius, sigma, angle float64
}

func init() {
	register("blur", describe(parseBlur, "Blurs the image: gaussian, adaptive, motion, radial or rotational.",
		enumParam("type", []string{"gaussian", "adaptive", "motion", "radial", "rotational"}, "Kind of blur.").def("gaussian"),
		enumParam("mode", []string{"gaussian", "adaptive", "motion", "radial", "rotational"}, "Synonym of type, for older clients."),
		numParam("radius", 0, 100, "Radius in pixels; required for gaussian, adaptive and motion."),
		numParam("sigma", 0, 100, "Standard deviation; required for gaussian, adaptive and motion."),
		numParam("angle", -360, 360, "Angle in degrees; required for motion, radial and rotational."),
	))
}

// blurRequired lists each kind's required parameters in message order.
var blurRequired = map[string][]string{
	"gaussian":   {"radius", "sigma"},
	"adaptive":   {"radius", "sigma"},
	"motion":     {"radius", "sigma", "angle"},
	"radial":     {"angle"},
	"rotational": {"angle"},
}

func parseBlur(p *Params) (Step, error) {
	// type's declared default applies only when mode is absent too.
	var kind, mode string
	if p.Has("type") {
		kind = p.String("type")
	}
	if mode = p.String("mode"); kind == "" {
		kind = mode
	} else if mode != "" && mode != kind {
		p.Fail("type and mode are synonyms but disagree: %q, %q", kind, mode)
	}
	if kind == "" {
		kind = "gaussian"
	}
	b := blur{kind: kind}
	req, ok := blurRequired[kind]
	if !ok {
		p.Fail("Unknown blur type: %s", kind)
	}
	for _, name := range req {
		p.Required(name)
	}
	// Every numeric parameter is parsed (and validated) for every kind.
	b.radius = p.Float("radius")
	b.sigma = p.Float("sigma")
	b.angle = p.Float("angle")
	if err := p.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b blur) Apply(s *State) error {
	format := s.Image.BandFormat()
	hasAlpha := s.Image.HasAlpha()
	var err error
	if hasAlpha {
		// Blur colour weighted by alpha, so transparent pixels do not bleed.
		err = premultiply(s.Image, 1)
	}
	if err == nil {
		switch b.kind {
		case "gaussian":
			err = b.gaussian(s.Image)
		case "adaptive":
			err = b.adaptive(s.Image)
		case "motion":
			err = b.motion(s)
		default:
			err = b.radial(s)
		}
	}
	if err == nil && hasAlpha {
		err = premultiply(s.Image, -1)
	}
	if err == nil {
		err = castTo(s.Image, format)
	}
	if err != nil {
		return fmt.Errorf("blur %s: %w", b.kind, err)
	}
	return nil
}

// streams: every kind reads its input top to bottom. The C kernels
// render it strip by strip (kernelInPlace); libvips' convolutions ask for
// rows a mask's height at a time, which the line cache of a sequential
// decode grows to hold.
func (blur) streams() {}

// premultiply multiplies (dir 1) or divides (dir -1) the colour bands of img
// by its normalised alpha, the last band. govips' own Premultiply keeps its
// state on the ImageRef, which the blurs replace, so it is done by hand.
func premultiply(img *vips.ImageRef, dir int) error {
	n := img.Bands()
	alpha, err := img.ExtractBandToImage(n-1, 1)
	if err != nil {
		return err
	}
	defer alpha.Close()
	scale, err := alpha.Copy()
	if err != nil {
		return err
	}
	defer scale.Close()
	max := 255.0
	if f := alpha.BandFormat(); f == vips.BandFormatUshort {
		max = 65535
	}
	steps := []func() error{
		func() error { return scale.Linear1(1/max, 0) },
		func() error { return img.ExtractBand(0, n-1) },
		func() error {
			if dir > 0 {
				return img.Multiply(scale)
			}
			return img.Divide(scale)
		},
		func() error { return img.BandJoin(alpha) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// gaussian is libvips gaussblur with sigma; ImageMagick's radius bounds the
// kernel, which libvips expresses as the amplitude where the kernel stops.
func (b blur) gaussian(img *vips.ImageRef) error {
	if b.sigma == 0 {
		return nil
	}
	return img.GaussianBlur(b.sigma, b.minAmpl())
}

// minAmpl is the amplitude where the gaussian's mask stops.
func (b blur) minAmpl() float64 {
	if b.radius > 0 {
		return math.Min(math.Max(math.Exp(-b.radius*b.radius/(2*b.sigma*b.sigma)), 0.001), 0.9)
	}
	return 0.2 // libvips' default; also ImageMagick's "pick a size" for radius 0
}

// adaptive blurs flat areas and keeps edges: a Sobel edge strength of the
// grey image, blurred a little and scaled to 0..1, mixes the original (edges)
// with the gaussian blur (flat areas): out = blurred + (orig-blurred)*edge.
// 8-bit sRGB and grey images (the usual case: no alpha) take one fused pass
// in blur_adaptive.c (vt_adaptive_u8); others the same steps as libvips operations.
func (b blur) adaptive(img *vips.ImageRef) error {
	if b.sigma == 0 {
		return nil
	}
	if img.BandFormat() == vips.BandFormatUchar {
		switch i := img.Interpretation(); {
		case img.Bands() == 3 && (i == vips.InterpretationSRGB || i == vips.InterpretationRGB),
			img.Bands() == 1 && i == vips.InterpretationBW:
			return adaptiveU8(img, b.sigma, b.minAmpl())
		}
	}
	return b.adaptiveOps(img)
}

// adaptiveOps is the adaptive blur as libvips operations, for any format.
func (b blur) adaptiveOps(img *vips.ImageRef) error {
	orig, err := img.Copy()
	if err != nil {
		return err
	}
	defer orig.Close()
	edge, err := img.Copy()
	if err != nil {
		return err
	}
	defer edge.Close()
	if err := b.gaussian(img); err != nil {
		return err
	}
	if edge.HasAlpha() {
		if err := edge.ExtractBand(0, edge.Bands()-1); err != nil {
			return err
		}
	}
	steps := []func() error{
		func() error { return edge.ToColorSpace(vips.InterpretationBW) },
		func() error { return edge.Cast(vips.BandFormatUchar) },
		func() error { return edge.Sobel() },
		func() error { return edge.GaussianBlur(1) },
		// An edge of 64 levels or more counts as fully sharp.
		func() error { return edge.Linear1(4, 0) },
		func() error { return edge.Cast(vips.BandFormatUchar) },
		func() error { return edge.Linear1(1.0/255, 0) },
		func() error { return orig.Subtract(img) },
		func() error { return orig.Multiply(edge) },
		func() error { return img.Add(orig) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// motion is ImageMagick's one-sided motion blur: the weighted average of the
// image shifted by i pixels along angle, for i in 0..2*ceil(radius), with
// gaussian weights exp(-i^2/2sigma^2), at the rounded offsets. An 8-bit
// image (the usual case: no alpha) goes through vt_motion_u8 (blur_motion.c), one
// vectorised pass over a source row per tap with the weights in 256ths;
// others through one libvips convolution with a mask holding the weights
// (vt_conv). Taps whose weight is negligible are dropped; beyond maxTaps
// the line is sampled every stride pixels (the weights still sum to one).
func (b blur) motion(s *State) error {
	width := 2*int(math.Ceil(b.radius)) + 1
	if b.radius <= 0.5 {
		width = 2*int(math.Ceil(3*b.sigma)) + 1
	}
	if b.sigma == 0 || width < 2 {
		return nil // ImageMagick: a zero sigma puts all weight on the pixel itself
	}
	sin, cos := math.Sincos(b.angle * math.Pi / 180)
	stride := (width + maxTaps - 1) / maxTaps
	type tap struct {
		dx, dy int
		w      float64
	}
	var (
		taps       []tap
		rx, ry     int
		maxW, sumW float64
	)
	for i := 0; i < width; i += stride {
		wt := math.Exp(-float64(i*i) / (2 * b.sigma * b.sigma))
		if wt < 1e-3 {
			break
		}
		t := tap{dx: int(math.Round(float64(i) * cos)), dy: int(math.Round(float64(i) * sin)), w: wt}
		taps = append(taps, t)
		rx, ry = max(rx, t.dx, -t.dx), max(ry, t.dy, -t.dy)
		maxW = max(maxW, wt)
	}
	if s.Image.BandFormat() == vips.BandFormatUchar {
		// 8-bit images (no alpha: blur premultiplies into float) take
		// the direct path: one pass over a source row per tap, weights
		// in 256ths (vt_motion_u8).
		dx, dy, w := make([]int, len(taps)), make([]int, len(taps)), make([]float64, len(taps))
		for i, t := range taps {
			dx[i], dy[i], w[i] = t.dx, t.dy, t.w
		}
		return motionU8(s.Image, dx, dy, w)
	}
	// The mask is centred: out(x, y) = sum mask(cx+dx, cy+dy) in(x+dx, y+dy).
	mw, mh := 2*rx+1, 2*ry+1
	mask := make([]float64, mw*mh)
	for _, t := range taps {
		// Integer weights (the largest 1000) keep libvips on its fast
		// integer path; the rounding is under 0.1% of a weight.
		w := math.Round(t.w / maxW * 1000)
		mask[(ry+t.dy)*mw+rx+t.dx] += w
		sumW += w
	}
	return convolve(s.Image, mask, mw, mh, sumW, precisionInteger)
}

// radial is ImageMagick's rotational blur: the average of the image rotated
// about its centre by angles spread over [-angle/2, angle/2]. Rather than
// resampling the image once per angle, it maps the image to polar
// coordinates, where a rotation is a shift along the angle axis, averages
// a box of angles there and maps back, a ring of radii at a time
// (vt_radial in blur_radial.c). Positions outside the image take the nearest edge
// pixel, so corners stay bright.
func (b blur) radial(s *State) error {
	cx, cy, na, nr, k, ok := radialGrid(s.Image.Width(), s.Image.Height(), b.angle)
	if !ok {
		return nil
	}
	switch s.Image.BandFormat() {
	case vips.BandFormatUchar, vips.BandFormatUshort, vips.BandFormatFloat:
	default:
		// vt_radial reads these three; Apply casts back.
		if err := s.Image.Cast(vips.BandFormatFloat); err != nil {
			return err
		}
	}
	return radialBlur(s.Image, cx, cy, na, nr, k)
}

// radialGrid is the polar grid of a rotational blur by angle degrees of a
// w x h image about its centre (cx, cy): na angles, nr radii and a box of k
// angles. ok is false when no pixel would move by a pixel.
func radialGrid(w, h int, angle float64) (cx, cy float64, na, nr, k int, ok bool) {
	cx, cy = float64(w)/2, float64(h)/2
	theta := math.Min(math.Abs(angle), 360)
	rmax := math.Hypot(math.Max(cx, float64(w)-cx), math.Max(cy, float64(h)-cy))
	if theta*math.Pi/180*rmax < 1 {
		return cx, cy, 0, 0, 0, false // under a pixel of arc anywhere
	}
	// Angles every three pixels of arc at the farthest corner (finer
	// inside), and at least 16 per box, but never closer than a pixel
	// apart there: a tiny angle must not ask for millions of angles (the
	// work and the rows kept grow with them); radii every pixel.
	circle := 2 * math.Pi * rmax
	na = min(max(int(math.Ceil(circle/3)), int(math.Ceil(16*360/theta))), int(math.Ceil(circle)))
	nr = int(math.Ceil(rmax)) + 2
	k = max(int(math.Round(theta/360*float64(na))), 3)
	if k%2 == 0 {
		k++
	}
	return cx, cy, na, nr, k, true
}

// maxTaps bounds the taps of a motion blur's mask.
const maxTaps = 64

// castTo converts img back to format, rounding (libvips' cast truncates).
func castTo(img *vips.ImageRef, format vips.BandFormat) error {
	if img.BandFormat() == format {
		return nil
	}
	switch format {
	case vips.BandFormatFloat, vips.BandFormatDouble, vips.BandFormatComplex, vips.BandFormatDpComplex:
	default:
		if err := img.Linear1(1, 0.5); err != nil {
			return err
		}
	}
	return img.Cast(format)
}

var _ Step = blur{}
