package engine

import (
	"fmt"
	"math"

	"github.com/davidbyttow/govips/v2/vips"
)

// try is one encode of a search and its score.
type try struct {
	data  []byte
	score float64
}

// qualityAnchors predict, per format, the quality whose output scores
// 50, 60, 70, 80, 90 and 95 by SSIMULACRA 2 on a typical photograph 1200
// pixels wide (read off the scores of qualities 40-92 on eleven of the byte
// benchmark's images, e2e/README.md, Perceptual quality: measurements); a search starts from the
// prediction for its target. JPEG XL's qualities for 80 and 90 were moved 3
// lower for DefaultJXLAutoEffort, whose outputs scored 84 at q81-87 (mean 84) on six
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

// search is one auto-quality search for the lowest quality of s.Image in
// format whose score meets target: what it encodes (img, the search proxy
// sp's image when s.Image has one), the reference its encodes are scored
// against (nil for an image too small to score, whose encodes all score
// 100), and what it has tried.
type search struct {
	e      *Engine
	s      *State
	format string
	img    *vips.ImageRef
	sp     *searchProxy
	ref    *s2Reference
	target float64
	tried  map[int]try
	// pass and fail are the lowest passing and the highest failing quality
	// tried (101 and 0 before any).
	pass, fail int
}

// prepare renders s.Image, builds its search proxy if it has one, and the
// reference of what the search encodes. The image as it would be encoded
// is rendered once here, so that the proxy and each encode read pixels
// rather than the chain.
func (sr *search) prepare() error {
	if err := copyMemory(sr.s.Image); err != nil {
		return err
	}
	sp, err := searchProxyOf(sr.s.Image, sr.format)
	if err != nil {
		return err
	}
	sr.img, sr.sp = sr.s.Image, sp
	if sp != nil {
		sr.img = sp.img
	}
	px, rw, rh, err := rgbPixels(sr.img)
	if err != nil {
		return err
	}
	if rw >= 8 && rh >= 8 {
		if sr.ref, err = newS2Reference(px, rw, rh); err != nil {
			return err
		}
	}
	return nil
}

// close frees the reference and the proxy's image.
func (sr *search) close() {
	if sr.ref != nil {
		sr.ref.Close()
	}
	if sr.sp != nil {
		sr.sp.img.Close()
	}
}

// startQuality is the quality a search for target in format at size class
// starts from: the quality stored for the format at another target or size
// class of this image, moved by the predicted difference between the
// targets (the nearest class first), else the prediction for target.
func startQuality(stored []QualityAnswer, format string, class int, target float64) int {
	start, startClass := predictQuality(format, target), -1
	for _, a := range stored {
		if a.Format == format && (startClass < 0 || absInt(a.Class-class) < absInt(startClass-class)) {
			start = min(max(a.Quality+predictQuality(format, target)-predictQuality(format, a.Target), 1), 100)
			startClass = a.Class
		}
	}
	return start
}

// run searches from quality start, within maxQualityEncodes encodes (one
// fewer on a proxy: the last encode is the full-size one).
func (sr *search) run(start int) error {
	tries := maxQualityEncodes
	if sr.sp != nil {
		tries--
	}
	q := sr.fromReference(start)
	for q >= 1 && q <= 100 && len(sr.tried) < tries {
		if _, seen := sr.tried[q]; seen {
			break
		}
		data, score, err := sr.encode(q)
		if err != nil {
			return err
		}
		if sr.record(q, data, score) {
			break
		}
		q = nextQuality(q, score, sr.target, sr.pass, sr.fail, sr.tried)
	}
	return nil
}

// fromReference is the first quality run encodes: start, except for a JPEG
// search on the image the reference was encoded on, which takes the
// reference encode, made already, as its first try and goes on from there
// (0 when that try ended the search).
func (sr *search) fromReference(start int) int {
	rt := sr.s.target
	on := ""
	if sr.sp != nil {
		on = sr.sp.kind
	}
	if sr.format != "jpg" || rt.refData == nil || rt.refOn != on {
		return start
	}
	q := rt.level.ref
	if sr.record(q, rt.refData, rt.refScore) {
		return 0
	}
	return nextQuality(q, rt.refScore, sr.target, sr.pass, sr.fail, sr.tried)
}

// encode encodes what the search encodes at quality q and scores it: 100
// without a reference, and on a proxy with the proxy's offset added.
func (sr *search) encode(q int) ([]byte, float64, error) {
	var data []byte
	var err error
	if sr.sp != nil {
		data, err = sr.e.encode(sr.img, &Output{Format: sr.format, Level: q, LevelSet: true, Strip: true, Searched: true})
	} else {
		data, err = sr.e.encodeAt(sr.s, q)
	}
	if err != nil {
		return nil, 0, err
	}
	score := 100.0
	if sr.ref != nil {
		if score, err = sr.ref.scoreEncoded(data); err != nil {
			return nil, 0, err
		}
		if sr.sp != nil {
			score += sr.sp.offset
		}
	}
	return data, score, nil
}

// record notes a try and reports whether the search is over: the passing
// and failing qualities are next to each other, or the try passed close
// enough to the target.
func (sr *search) record(q int, data []byte, score float64) bool {
	sr.tried[q] = try{data, score}
	if score >= sr.target {
		sr.pass = min(sr.pass, q)
	} else {
		sr.fail = max(sr.fail, q)
	}
	return sr.pass-sr.fail <= 1 || (score >= sr.target && score-sr.target < closeEnough)
}

// choose is the quality the search settles on and the try that stands
// for it: the lowest passing quality; when a proxy's encodes all fell
// short, one more step up, unscored; when nothing tried met the target,
// the best tried. note says which of the last two it was.
func (sr *search) choose() (q int, t try, note string) {
	switch {
	case sr.pass <= 100:
		return sr.pass, sr.tried[sr.pass], ""
	case sr.sp != nil && sr.fail < 100:
		t = sr.tried[sr.fail]
		return nextQuality(sr.fail, t.score, sr.target, sr.pass, sr.fail, sr.tried), t, "; extrapolated"
	default:
		return sr.fail, sr.tried[sr.fail], "; target not met"
	}
}

// answer encodes s.Image at the chosen quality (the try's data when the
// search ran on s.Image itself), sets the Quality header to what the search
// did and returns the answer, for size class, to store.
func (sr *search) answer(class int) ([]byte, *QualityAnswer, error) {
	chosen, t, note := sr.choose()
	encodes := len(sr.tried)
	data := t.data
	if sr.sp != nil {
		var err error
		if data, err = sr.e.encodeAt(sr.s, chosen); err != nil {
			return nil, nil, err
		}
		encodes++
		note += "; proxy=" + sr.sp.kind
	}
	rt := sr.s.target
	sr.s.Headers["Quality"] = fmt.Sprintf("q=%d; target=%s; score=%.1f; encodes=%d%s", chosen, rt.describe(), t.score, encodes, note)
	return data, &QualityAnswer{Format: sr.format, Class: class, Target: sr.target, Key: rt.key, Quality: chosen, Score: t.score, Bytes: len(data)}, nil
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
