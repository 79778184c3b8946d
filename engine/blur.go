package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// blur is one of ImageMagick's blurs (REFERENCE.md 5.3); `type` and `mode`
// name the kind (RULINGS.md 19). The non-gaussian kinds are composed from
// exported libvips operations (see each method).
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
	kind := p.String("type", "")
	if mode := p.String("mode", ""); kind == "" {
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
	b.radius = p.Float("radius", 0, 0, 100)
	b.sigma = p.Float("sigma", 0, 0, 100)
	b.angle = p.Float("angle", 0, -360, 360)
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
	minAmpl := 0.2 // libvips' default; also ImageMagick's "pick a size" for radius 0
	if b.radius > 0 {
		minAmpl = math.Min(math.Max(math.Exp(-b.radius*b.radius/(2*b.sigma*b.sigma)), 0.001), 0.9)
	}
	return img.GaussianBlur(b.sigma, minAmpl)
}

// adaptive blurs flat areas and keeps edges: a Sobel edge strength of the
// grey image, blurred a little and scaled to 0..1, mixes the original (edges)
// with the gaussian blur (flat areas): out = blurred + (orig-blurred)*edge.
func (b blur) adaptive(img *vips.ImageRef) error {
	if b.sigma == 0 {
		return nil
	}
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
// gaussian weights exp(-i^2/2sigma^2). libvips' public API has no custom
// convolution, so each tap is an edge-extending Embed; taps whose weight is
// negligible are dropped.
func (b blur) motion(s *State) error {
	width := 2*int(math.Ceil(b.radius)) + 1
	if b.radius <= 0.5 {
		width = 2*int(math.Ceil(3*b.sigma)) + 1
	}
	if b.sigma == 0 || width < 2 {
		return nil // ImageMagick: a zero sigma puts all weight on the pixel itself
	}
	sin, cos := math.Sincos(b.angle * math.Pi / 180)
	w, h := s.Image.Width(), s.Image.Height()
	// Each tap costs a pass over the image: beyond maxTaps, sample the line
	// every stride pixels (the weights still sum to one).
	stride := (width + maxTaps - 1) / maxTaps
	var taps []vipsTap
	for i := 0; i < width; i += stride {
		wt := math.Exp(-float64(i*i) / (2 * b.sigma * b.sigma))
		if wt < 1e-3 {
			break
		}
		taps = append(taps, vipsTap{dx: int(math.Round(float64(i) * cos)), dy: int(math.Round(float64(i) * sin)), w: wt})
	}
	return averageOf(s, taps, func(img *vips.ImageRef, t vipsTap) error {
		// out(x,y) = in(x+dx, y+dy)
		return img.Embed(-t.dx, -t.dy, w, h, vips.ExtendCopy)
	})
}

// radial is ImageMagick's rotational blur: the average of copies rotated
// about the centre by angles spread over [-angle/2, angle/2]. Each copy is a
// Mapim with a rotation index built from XYZ, on the image extended by
// copying its edge so corners stay bright.
func (b blur) radial(s *State) error {
	if b.angle == 0 {
		return nil
	}
	w, h := s.Image.Width(), s.Image.Height()
	cx, cy := float64(w)/2, float64(h)/2
	theta := math.Abs(b.angle) * math.Pi / 180
	// ImageMagick's sample count, capped: each sample costs a full resample.
	n := int(4*theta*math.Sqrt(math.Hypot(cx, cy)) + 2)
	n = min(max(n, 2), maxTaps/2)
	margin := int(math.Ceil(2*math.Hypot(cx, cy)*math.Sin(math.Min(theta, math.Pi)/2))) + 2
	taps := make([]vipsTap, n)
	for i := range taps {
		taps[i] = vipsTap{a: -theta/2 + theta*float64(i)/float64(n-1), w: 1}
	}
	return averageOf(s, taps, func(img *vips.ImageRef, t vipsTap) error {
		if err := img.Embed(margin, margin, w+2*margin, h+2*margin, vips.ExtendCopy); err != nil {
			return err
		}
		index, err := rotationIndex(w, h, cx, cy, t.a, float64(margin))
		if err != nil {
			return err
		}
		defer index.Close()
		return img.Mapim(index)
	})
}

// rotationIndex is a w x h two-band map for Mapim: for each output pixel, the
// input position rotated by a radians about (cx, cy), plus off.
func rotationIndex(w, h int, cx, cy, a, off float64) (*vips.ImageRef, error) {
	dx, dy, err := centredCoords(w, h, cx, cy)
	if err != nil {
		return nil, err
	}
	defer dx.Close()
	defer dy.Close()
	sin, cos := math.Sincos(a)
	// x' = cx + dx cos - dy sin, y' = cy + dx sin + dy cos
	comb := func(ka, kb, c float64) (*vips.ImageRef, error) {
		out, err := dx.Copy()
		if err != nil {
			return nil, err
		}
		t, err := dy.Copy()
		if err != nil {
			out.Close()
			return nil, err
		}
		defer t.Close()
		if err = out.Linear1(ka, c+off); err == nil {
			if err = t.Linear1(kb, 0); err == nil {
				err = out.Add(t)
			}
		}
		if err != nil {
			out.Close()
			return nil, err
		}
		return out, nil
	}
	x, err := comb(cos, -sin, cx)
	if err != nil {
		return nil, err
	}
	y, err := comb(sin, cos, cy)
	if err != nil {
		x.Close()
		return nil, err
	}
	defer y.Close()
	if err := x.BandJoin(y); err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

// maxTaps bounds the passes a motion blur makes (radial: half of it, each
// being a resample); libvips without a custom convolution pays per pass.
const maxTaps = 64

// vipsTap is one term of a weighted average: a shift or a rotation.
type vipsTap struct {
	dx, dy int
	a, w   float64
}

// averageOf replaces s.Image with sum(w_i * move_i(image)) / sum(w_i), keeping
// its band format.
func averageOf(s *State, taps []vipsTap, move func(*vips.ImageRef, vipsTap) error) error {
	var total float64
	for _, t := range taps {
		total += t.w
	}
	var acc *vips.ImageRef
	for _, t := range taps {
		c, err := s.Image.Copy()
		if err == nil {
			err = move(c, t)
		}
		if err == nil {
			err = c.Linear1(t.w/total, 0)
		}
		if err == nil && acc != nil {
			err = acc.Add(c)
			c.Close()
		} else if err == nil {
			acc = c
		} else if c != nil {
			c.Close()
		}
		if err != nil {
			if acc != nil {
				acc.Close()
			}
			return err
		}
	}
	swapImage(s, acc)
	return nil
}

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
