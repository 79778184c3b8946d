package engine

import (
	"fmt"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
)

// QualityLevels are the named perceptual targets of compress:level=auto,
// quality=auto and autoQuality.target, lowest first.
var QualityLevels = []string{"low", "medium", "high", "lossless-like"}

// qualityLevel is what a named target asks for: a fixed SSIMULACRA 2
// score, or, when ref is set, the score of the image's own JPEG at quality
// ref (as the search's proxy predicts it) plus margin, within [floor, ceil].
type qualityLevel struct {
	score               float64
	ref                 int
	margin, floor, ceil float64
}

// qualityLevels are the named targets (engine/README.md, Perceptual quality). high is
// the look of a q80 JPEG of the same image, the common default: on the
// byte benchmark's images q80 JPEG scores 70-87, so a fixed score either
// falls short of it on the smooth images or overspends on the detailed
// ones, which weigh most in bytes. Its margin of 1 covers the proxy's
// error (with none, 29 of 37 outputs scored at least the image's q80 JPEG,
// the lowest 3 points below); its floor and ceiling keep it between medium
// and lossless-like. The others are fixed scores: a q95 JPEG scores about
// 90.
var qualityLevels = map[string]qualityLevel{
	"low":           {score: 65},
	"medium":        {score: 75},
	"high":          {ref: 80, margin: 1, floor: 75, ceil: 90},
	"lossless-like": {score: 90},
}

// key names the definition of a relative level in a stored answer, so that
// an answer found under another definition is not taken for this one's; ""
// for a fixed score, whose answers are matched by the score.
func (l qualityLevel) key(name string) string {
	if l.ref == 0 {
		return ""
	}
	k := fmt.Sprintf("%s:jpg%d%+g", name, l.ref, l.margin)
	if l.floor > 0 {
		k += fmt.Sprintf(",floor%g", l.floor)
	}
	if l.ceil < 100 {
		k += fmt.Sprintf(",ceil%g", l.ceil)
	}
	return k
}

// matches reports whether a stored answer was found under this level.
func (l qualityLevel) matches(name string, a QualityAnswer) bool {
	if l.ref == 0 {
		return a.Key == "" && a.Target == l.score
	}
	return a.Key == l.key(name)
}

// resolved is a level's target for the image a render encodes: the score,
// and for a relative level the reference's predicted score and its encode
// (on the proxy, or the image when it has none), which a JPEG search at the
// reference's quality takes as its first try.
type resolved struct {
	name, key string
	target    float64
	level     qualityLevel
	refScore  float64
	refData   []byte
	refOn     string // "mosaic" or "" (the image itself)
}

// describe is the target as the Quality header states it: high(jpg80
// 81.3+1=82.3), high(jpg80 69.8+1, floor 75=75.0) when clamped.
func (r *resolved) describe() string {
	l := r.level
	if l.ref == 0 {
		return fmt.Sprintf("%s(%g)", r.name, r.target)
	}
	d := fmt.Sprintf("%s(jpg%d %.1f%+g", r.name, l.ref, r.refScore, l.margin)
	switch raw := r.refScore + l.margin; {
	case r.target > raw:
		d += fmt.Sprintf(", floor %g", l.floor)
	case r.target < raw:
		d += fmt.Sprintf(", ceiling %g", min(l.ceil, 100))
	}
	return d + fmt.Sprintf("=%.1f)", r.target)
}

// describeStored is the target of a stored answer as the Quality header
// states it: high(jpg80+1=82.3).
func describeStored(name string, l qualityLevel, a QualityAnswer) string {
	if l.ref == 0 {
		return fmt.Sprintf("%s(%g)", name, a.Target)
	}
	return fmt.Sprintf("%s(jpg%d%+g=%.1f)", name, l.ref, l.margin, a.Target)
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
	Format string
	Class  int
	// Target is the score the answer met; Key names a relative level's
	// definition ("" for a fixed score), so that an answer is reused only
	// under the definition that found it.
	Target  float64
	Key     string
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

// qualityLevel resolves a target name ("" for the configured one).
func (e *Engine) qualityLevel(name string) (string, qualityLevel) {
	if name == "" {
		name = e.cfg.AutoQuality.Target
	}
	if name == "" {
		name = DefaultQualityTarget
	}
	return name, qualityLevels[name]
}

// storedAnswer is the answer stored for format and class under the named
// level, if any.
func storedAnswer(stored []QualityAnswer, format string, class int, name string, l qualityLevel) (QualityAnswer, bool) {
	for _, a := range stored {
		if a.Format == format && a.Class == class && l.matches(name, a) {
			return a, true
		}
	}
	return QualityAnswer{}, false
}

// resolveTarget sets s.target, the target of the render's level for its
// image, once per render (a best-format render's candidates share it). A
// relative level encodes the reference JPEG on the mosaic proxy (img, with
// its prepared reference ref, when sp is the mosaic; built here otherwise)
// or on the image itself when it has no proxy, and scores it.
func (e *Engine) resolveTarget(s *State, img *vips.ImageRef, ref *s2Reference, sp *searchProxy) error {
	name, l := e.qualityLevel(s.Output.AutoTarget)
	if s.target != nil && s.target.name == name {
		return nil
	}
	r := &resolved{name: name, key: l.key(name), target: l.score, level: l}
	s.target = r
	if l.ref == 0 {
		return nil
	}
	if sp != nil && sp.kind != "mosaic" {
		m, err := searchProxyOf(s.Image, "jpg")
		if err != nil {
			return err
		}
		defer m.img.Close()
		px, w, h, err := rgbPixels(m.img)
		if err != nil {
			return err
		}
		if ref, err = newS2Reference(px, w, h); err != nil {
			return err
		}
		defer ref.Close()
		img, sp = m.img, m
	}
	var err error
	if sp != nil {
		r.refData, err = e.encode(img, &Output{Format: "jpg", Level: l.ref, LevelSet: true, Strip: true, Searched: true})
		r.refOn = sp.kind
	} else {
		r.refData, err = e.encodeAtFormat(s, "jpg", l.ref)
	}
	if err != nil {
		return err
	}
	r.refScore = 100
	if ref != nil {
		if r.refScore, err = ref.scoreEncoded(r.refData); err != nil {
			return err
		}
		if sp != nil {
			r.refScore += proxyOffsets["jpg"]
		}
	}
	r.target = min(max(r.refScore+l.margin, l.floor), l.ceil, 100)
	return nil
}

// autoEncode encodes s.Image in s.Output.Format at the lowest quality
// whose SSIMULACRA 2 score against the unencoded image meets the target:
// the stored answer when one fits (one encode), else a search of at most
// maxQualityEncodes encodes started from the stored answer for the format
// at another target or size, or from a prediction for the target. An image
// larger than the search proxy (autoproxy.go) is searched on the proxy and
// encoded once at full size at the quality found. A relative target (high:
// the look of the image's own q80 JPEG) is resolved first (resolveTarget),
// and a JPEG search takes the reference encode as its first try. It sets
// the Quality header and, after a search, returns the answer found.
func (e *Engine) autoEncode(s *State, stored []QualityAnswer) ([]byte, *QualityAnswer, error) {
	format := s.Output.Format
	name, level := e.qualityLevel(s.Output.AutoTarget)
	class := SizeClass(s.Image.Width(), s.Image.Height())
	if a, ok := storedAnswer(stored, format, class, name, level); ok {
		return e.encodeStored(s, name, level, a)
	}
	sr := &search{e: e, s: s, format: format, tried: map[int]try{}, pass: 101}
	defer sr.close()
	if err := sr.prepare(); err != nil {
		return nil, nil, err
	}
	if err := e.resolveTarget(s, sr.img, sr.ref, sr.sp); err != nil {
		return nil, nil, err
	}
	sr.target = s.target.target
	if err := sr.run(startQuality(stored, format, class, sr.target)); err != nil {
		return nil, nil, err
	}
	return sr.answer(class)
}

// encodeStored encodes s.Image at the quality of a, the answer stored for
// its format, size class and the named level, and says so in the Quality
// header: one encode, no answer to store.
func (e *Engine) encodeStored(s *State, name string, level qualityLevel, a QualityAnswer) ([]byte, *QualityAnswer, error) {
	data, err := e.encodeAt(s, a.Quality)
	s.Headers["Quality"] = fmt.Sprintf("q=%d; stored; target=%s", a.Quality, describeStored(name, level, a))
	return data, nil, err
}

// encodeAt encodes s.Image in s.Output.Format at quality q.
func (e *Engine) encodeAt(s *State, q int) ([]byte, error) {
	return e.encodeAtFormat(s, s.Output.Format, q)
}

// encodeAtFormat encodes s.Image in format at quality q, with the output's
// other options.
func (e *Engine) encodeAtFormat(s *State, format string, q int) ([]byte, error) {
	out := *s.Output
	out.Format = format
	out.Level, out.LevelSet, out.Auto, out.Searched = q, true, false, true
	start := time.Now()
	data, err := e.encode(s.Image, &out)
	if err != nil {
		return nil, err
	}
	e.observe("encode", out.Format, start)
	return e.finishEncoded(data, &out)
}

// scoreEncoded decodes data and scores it against the reference.
func (r *s2Reference) scoreEncoded(data []byte) (float64, error) {
	img, err := vips.NewImageFromBuffer(data)
	if err != nil {
		return 0, fmt.Errorf("engine: auto quality: decode: %w", err)
	}
	defer img.Close()
	px, dw, dh, err := rgbPixels(img)
	if err != nil {
		return 0, err
	}
	if dw != r.w || dh != r.h {
		return 0, fmt.Errorf("engine: auto quality: decoded %dx%d, encoded %dx%d", dw, dh, r.w, r.h)
	}
	return r.score(px)
}

// WantsQuality reports whether the chain asks for auto quality
// (compress:level=auto): a render of it reads the stored answers
// (Request.Qualities), and a caller may offer it several formats
// (Request.Formats).
func (c Chain) WantsQuality() bool {
	for _, st := range c.steps {
		if cs, ok := st.(*compress); ok && cs.auto {
			return true
		}
	}
	return false
}
