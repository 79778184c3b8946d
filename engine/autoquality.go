package engine

import (
	"fmt"
	"math"
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

// qualityLevels are the named targets (README, Perceptual quality). high is
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

// try is one encode of a search and its score.
type try struct {
	data  []byte
	score float64
}

// qualityAnchors predict, per format, the quality whose output scores
// 50, 60, 70, 80, 90 and 95 by SSIMULACRA 2 on a typical photograph 1200
// pixels wide (read off the scores of qualities 40-92 on eleven of the byte
// benchmark's images, README, Perceptual quality); a search starts from the
// prediction for its target. JPEG XL's qualities for 80 and 90 were moved 3
// lower for jxlAutoEffort, whose outputs scored 84 at q81-87 (mean 84) on six
// of those images, where effort 4 needed q84-89.
var qualityAnchors = map[string][6]float64{
	"jpg":  {30, 45, 62, 80, 93, 98},
	"webp": {35, 55, 72, 88, 97, 100},
	"avif": {38, 50, 60, 76, 92, 97},
	"jxl":  {30, 47, 64, 79, 91, 98},
}

// predictQuality is the quality predicted to score target in format.
func predictQuality(format string, target float64) int {
	a, ok := qualityAnchors[format]
	if !ok {
		return 75
	}
	scores := [6]float64{50, 60, 70, 80, 90, 95}
	i := 0
	for i < 4 && target > scores[i+1] {
		i++
	}
	q := a[i] + (target-scores[i])*(a[i+1]-a[i])/(scores[i+1]-scores[i])
	return min(max(int(math.Round(q)), 1), 100)
}

// closeEnough ends a search at a passing quality whose score is that close
// to the target: a lower quality would barely save a byte.
const closeEnough = 0.5

// maxQualityEncodes bounds the encodes of one search: with a proxy, the
// proxy's encodes and the one at full size.
const maxQualityEncodes = 4

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
// the Quality header and, after a search, res.Quality.
func (e *Engine) autoEncode(s *State, stored []QualityAnswer) ([]byte, *QualityAnswer, error) {
	format := s.Output.Format
	name, level := e.qualityLevel(s.Output.AutoTarget)
	w, h := s.Image.Width(), s.Image.Height()
	class := SizeClass(w, h)
	if a, ok := storedAnswer(stored, format, class, name, level); ok {
		data, err := e.encodeAt(s, a.Quality)
		s.Headers["Quality"] = fmt.Sprintf("q=%d; stored; target=%s", a.Quality, describeStored(name, level, a))
		return data, nil, err
	}
	// The image as it would be encoded is rendered once here, so that the
	// proxy and each encode read pixels rather than the chain.
	if err := copyMemory(s.Image); err != nil {
		return nil, nil, err
	}
	sp, err := searchProxyOf(s.Image, format)
	if err != nil {
		return nil, nil, err
	}
	img := s.Image
	if sp != nil {
		defer sp.img.Close()
		img = sp.img
	}
	px, rw, rh, err := rgbPixels(img)
	if err != nil {
		return nil, nil, err
	}
	var ref *s2Reference
	if rw >= 8 && rh >= 8 {
		if ref, err = newS2Reference(px, rw, rh); err != nil {
			return nil, nil, err
		}
		defer ref.Close()
	}
	if err := e.resolveTarget(s, img, ref, sp); err != nil {
		return nil, nil, err
	}
	rt := s.target
	target := rt.target
	start, startClass := predictQuality(format, target), -1
	for _, a := range stored {
		// Another target or size class of this image: its quality moved by
		// the predicted difference between the targets, the nearest class
		// first.
		if a.Format == format && (startClass < 0 || absInt(a.Class-class) < absInt(startClass-class)) {
			start = min(max(a.Quality+predictQuality(format, target)-predictQuality(format, a.Target), 1), 100)
			startClass = a.Class
		}
	}
	tries := maxQualityEncodes
	if sp != nil {
		tries-- // the last encode is the full-size one
	}
	tried := map[int]try{}
	pass, fail := 101, 0 // lowest passing and highest failing quality
	// record notes a try and reports whether the search is over.
	record := func(q int, data []byte, score float64) bool {
		tried[q] = try{data, score}
		if score >= target {
			pass = min(pass, q)
		} else {
			fail = max(fail, q)
		}
		return pass-fail <= 1 || (score >= target && score-target < closeEnough)
	}
	q := start
	// A JPEG search on the image the reference was encoded on starts from
	// the reference encode, made already.
	on := ""
	if sp != nil {
		on = sp.kind
	}
	if format == "jpg" && rt.refData != nil && rt.refOn == on {
		q = rt.level.ref
		if record(q, rt.refData, rt.refScore) {
			q = 0
		} else {
			q = nextQuality(q, rt.refScore, target, pass, fail, tried)
		}
	}
	for q >= 1 && q <= 100 && len(tried) < tries {
		if _, seen := tried[q]; seen {
			break
		}
		var data []byte
		if sp != nil {
			data, err = e.encode(img, &Output{Format: format, Level: q, LevelSet: true, Strip: true, Searched: true})
		} else {
			data, err = e.encodeAt(s, q)
		}
		if err != nil {
			return nil, nil, err
		}
		score := 100.0
		if ref != nil {
			if score, err = ref.scoreEncoded(data); err != nil {
				return nil, nil, err
			}
			if sp != nil {
				score += sp.offset
			}
		}
		if record(q, data, score) {
			break
		}
		q = nextQuality(q, score, target, pass, fail, tried)
	}
	chosen, note := pass, ""
	var t try
	switch {
	case pass <= 100:
		t = tried[pass]
	case sp != nil && fail < 100:
		// The proxy's encodes all fell short: one more step, unscored.
		chosen, t, note = nextQuality(fail, tried[fail].score, target, pass, fail, tried), tried[fail], "; extrapolated"
	default:
		// Nothing tried met the target: the best tried.
		chosen, t, note = fail, tried[fail], "; target not met"
	}
	encodes := len(tried)
	data := t.data
	if sp != nil {
		if data, err = e.encodeAt(s, chosen); err != nil {
			return nil, nil, err
		}
		encodes++
		note += "; proxy=" + sp.kind
	}
	s.Headers["Quality"] = fmt.Sprintf("q=%d; target=%s; score=%.1f; encodes=%d%s", chosen, rt.describe(), t.score, encodes, note)
	return data, &QualityAnswer{Format: format, Class: class, Target: target, Key: rt.key, Quality: chosen, Score: t.score, Bytes: len(data)}, nil
}

// absInt is |x|.
func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
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
// (compress:level=auto), so that a caller loads the stored answers.
func (c Chain) WantsQuality() bool {
	for _, st := range c.steps {
		if cs, ok := st.(*compress); ok && cs.auto {
			return true
		}
	}
	return false
}
