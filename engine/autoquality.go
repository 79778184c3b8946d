package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
)

// QualityLevels are the named perceptual targets of compress:level=auto,
// quality=auto and autoQuality.target, lowest first.
var QualityLevels = []string{"low", "medium", "high", "lossless-like"}

// qualityScores are the SSIMULACRA 2 scores the named targets ask for
// (README, Perceptual quality): on the photographs of the byte benchmark
// a q80 libjpeg output scores 74-85, a q95 one about 90.
var qualityScores = map[string]float64{"low": 60, "medium": 70, "high": 80, "lossless-like": 90}

// DefaultQualityTarget is autoQuality.target's default.
const DefaultQualityTarget = "high"

// AutoQuality configures compress:level=auto and quality=auto.
type AutoQuality struct {
	// Target is the named target used when a request names none: low,
	// medium, high or lossless-like (default high).
	Target string `yaml:"target"`
}

// Validate reports an unknown target.
func (a AutoQuality) Validate() error {
	if a.Target != "" && !slices.Contains(QualityLevels, a.Target) {
		return fmt.Errorf("engine: autoQuality.target: %q is not one of %v", a.Target, QualityLevels)
	}
	return nil
}

// AutoQualityFormats are the output formats whose quality auto quality
// searches; other formats are encoded as without it.
func AutoQualityFormats() []string {
	var f []string
	for _, ext := range []string{"avif", "webp", "jxl", "jpg"} {
		if _, ok := mimeOf[ext]; ok {
			f = append(f, ext)
		}
	}
	return f
}

// QualityAnswer is one auto-quality decision for an image: the quality
// chosen for a format and size class under a target, with the score and
// size of that output.
type QualityAnswer struct {
	Format  string
	Class   int
	Target  float64
	Quality int
	Score   float64
	Bytes   int
}

// SizeClass is the size class of a w x h output: the longest side's power-
// of-two bucket from 256 pixels (0: up to 256, 1: up to 512, ...), so an
// answer found at one size is reused for similar sizes.
func SizeClass(w, h int) int {
	side := max(w, h)
	c := 0
	for lim := 256; side > lim && c < 8; lim *= 2 {
		c++
	}
	return c
}

// try is one encode of a search and its score.
type try struct {
	data  []byte
	score float64
}

// qualityStart is where a search without a stored answer starts, by format.
var qualityStart = map[string]int{"jpg": 75, "webp": 75, "avif": 55, "jxl": 75}

// maxQualityEncodes bounds the encodes of one search.
const maxQualityEncodes = 4

// qualityTarget resolves a target name ("" for the configured one).
func (e *Engine) qualityTarget(name string) (string, float64) {
	if name == "" {
		name = e.cfg.AutoQuality.Target
	}
	if name == "" {
		name = DefaultQualityTarget
	}
	return name, qualityScores[name]
}

// autoEncode encodes s.Image in s.Output.Format at the lowest quality
// whose SSIMULACRA 2 score against the unencoded image meets the target:
// the stored answer when one fits (one encode), else a search of at most
// maxQualityEncodes encodes started from the stored answer for the format
// at another target or size, or from a per-format guess. It sets the
// Quality header and, after a search, res.Quality.
func (e *Engine) autoEncode(s *State, stored []QualityAnswer) ([]byte, *QualityAnswer, error) {
	name, target := e.qualityTarget(s.Output.AutoTarget)
	w, h := s.Image.Width(), s.Image.Height()
	class := SizeClass(w, h)
	start := qualityStart[s.Output.Format]
	for _, a := range stored {
		if a.Format != s.Output.Format {
			continue
		}
		if a.Class == class && a.Target == target {
			data, err := e.encodeAt(s, a.Quality)
			s.Headers["Quality"] = fmt.Sprintf("q=%d; stored; target=%s(%g)", a.Quality, name, target)
			return data, nil, err
		}
		if a.Class == class || start == qualityStart[s.Output.Format] {
			start = a.Quality
		}
	}
	// The reference is the image as it would be encoded; it is rendered
	// once here so that each encode reads pixels rather than the chain.
	if err := copyMemory(s.Image); err != nil {
		return nil, nil, err
	}
	ref, rw, rh, err := rgbPixels(s.Image)
	if err != nil {
		return nil, nil, err
	}
	tried := map[int]try{}
	pass, fail := 101, 0 // lowest passing and highest failing quality
	q := start
	for len(tried) < maxQualityEncodes {
		data, err := e.encodeAt(s, q)
		if err != nil {
			return nil, nil, err
		}
		score := 100.0
		if rw >= 8 && rh >= 8 {
			if score, err = scoreEncoded(ref, rw, rh, data); err != nil {
				return nil, nil, err
			}
		}
		tried[q] = try{data, score}
		if score >= target {
			pass = min(pass, q)
		} else {
			fail = max(fail, q)
		}
		if pass-fail <= 1 {
			break
		}
		q = nextQuality(q, score, target, pass, fail, tried)
		if _, seen := tried[q]; seen || q < 1 || q > 100 {
			break
		}
	}
	chosen, note := pass, ""
	if pass > 100 {
		// Nothing tried met the target: the best tried.
		chosen, note = fail, "; target not met"
	}
	t := tried[chosen]
	s.Headers["Quality"] = fmt.Sprintf("q=%d; target=%s(%g); score=%.1f; encodes=%d%s", chosen, name, target, t.score, len(tried), note)
	return t.data, &QualityAnswer{Format: s.Output.Format, Class: class, Target: target, Quality: chosen, Score: t.score, Bytes: len(t.data)}, nil
}

// nextQuality is the next quality to try: between the bounds by the
// secant of the two tried qualities nearest the target when both sides are
// known, else a step from q assuming 0.6 score points a quality step (steep
// enough that the step rarely overshoots far).
func nextQuality(q int, score, target float64, pass, fail int, tried map[int]try) int {
	if pass <= 100 && fail > 0 {
		sp, sf := tried[pass].score, tried[fail].score
		n := fail + 1
		if sp > sf {
			n = fail + int(math.Ceil((target-sf)*float64(pass-fail)/(sp-sf)))
		}
		return min(max(n, fail+1), pass-1)
	}
	step := int(math.Ceil(math.Abs(score-target) / 0.6))
	step = min(max(step, 2), 30)
	if score >= target {
		return max(q-step, 1)
	}
	return min(q+step, 100)
}

// encodeAt encodes s.Image in s.Output.Format at quality q.
func (e *Engine) encodeAt(s *State, q int) ([]byte, error) {
	out := *s.Output
	out.Level, out.LevelSet, out.Auto = q, true, false
	start := time.Now()
	data, err := e.encode(s.Image, &out)
	if err != nil {
		return nil, err
	}
	e.observe("encode", out.Format, start)
	return e.finishEncoded(data, &out)
}

// scoreEncoded decodes data and scores it against the w x h reference.
func scoreEncoded(ref []byte, w, h int, data []byte) (float64, error) {
	img, err := vips.NewImageFromBuffer(data)
	if err != nil {
		return 0, fmt.Errorf("engine: auto quality: decode: %w", err)
	}
	defer img.Close()
	px, dw, dh, err := rgbPixels(img)
	if err != nil {
		return 0, err
	}
	if dw != w || dh != h {
		return 0, fmt.Errorf("engine: auto quality: decoded %dx%d, encoded %dx%d", dw, dh, w, h)
	}
	return ssimulacra2(ref, px, w, h)
}

// WantsQuality reports whether the chain asks for auto quality
// (compress:level=auto), so that a caller loads the stored answers.
func (c Chain) WantsQuality() bool {
	for _, st := range c.steps {
		if cs, ok := st.(*compress); ok && cs.auto {
			return true
		}
	}
	return false
}
