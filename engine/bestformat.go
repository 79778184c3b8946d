package engine

import (
	"fmt"
	"slices"
	"strings"
)

// bestEncode encodes s.Image in whichever of s.formats (the auto-quality
// formats the client accepts) gives the fewest bytes at the auto-quality
// target, each at its own auto quality. When every candidate has a stored
// answer for this size class and target, the choice is a lookup and costs
// one encode; otherwise each candidate without one is searched and its
// answer returned for storing (the chosen one as answer, the others as
// searched). It sets s.Output.Format to the choice and the Format header
// to how it was made.
func (e *Engine) bestEncode(s *State) ([]byte, *QualityAnswer, []QualityAnswer, error) {
	name, level := e.qualityLevel(s.Output.AutoTarget)
	class := SizeClass(s.Image.Width(), s.Image.Height())
	var cands []string
	for _, f := range AutoQualityFormats() {
		if slices.Contains(s.formats, f) {
			cands = append(cands, f)
		}
	}
	if len(cands) == 0 {
		return e.autoEncodeOnly(s)
	}
	stored := map[string]QualityAnswer{}
	for _, f := range cands {
		if a, ok := storedAnswer(s.qualities, f, class, name, level); ok {
			stored[f] = a
		}
	}
	list := strings.Join(cands, ",")
	if len(stored) == len(cands) {
		best := pickSmallest(cands, func(f string) (int, float64, float64) { return stored[f].Bytes, stored[f].Score, stored[f].Target })
		s.Output.Format = best
		data, _, err := e.autoEncode(s, s.qualities)
		s.Headers["Format"] = fmt.Sprintf("%s; stored; candidates=%s", best, list)
		return data, nil, nil, err
	}
	type out struct {
		data   []byte
		answer *QualityAnswer
		score  float64
		target float64
		header string
	}
	outs := map[string]out{}
	for _, f := range cands {
		s.Output.Format = f
		data, answer, err := e.autoEncode(s, s.qualities)
		if err != nil {
			return nil, nil, nil, err
		}
		o := out{data: data, answer: answer, header: s.Headers["Quality"]}
		if answer != nil {
			o.score, o.target = answer.Score, answer.Target
		} else {
			o.score, o.target = stored[f].Score, stored[f].Target
		}
		outs[f] = o
	}
	best := pickSmallest(cands, func(f string) (int, float64, float64) { return len(outs[f].data), outs[f].score, outs[f].target })
	var searched []QualityAnswer
	for _, f := range cands {
		if a := outs[f].answer; a != nil && f != best {
			searched = append(searched, *a)
		}
	}
	o := outs[best]
	s.Output.Format = best
	s.Headers["Quality"] = o.header
	sizes := make([]string, len(cands))
	for i, f := range cands {
		sizes[i] = fmt.Sprintf("%s=%d", f, len(outs[f].data))
	}
	s.Headers["Format"] = fmt.Sprintf("%s; searched; %s", best, strings.Join(sizes, ","))
	return o.data, o.answer, searched, nil
}

// autoEncodeOnly is autoEncode in s.Output.Format with bestEncode's results.
func (e *Engine) autoEncodeOnly(s *State) ([]byte, *QualityAnswer, []QualityAnswer, error) {
	data, a, err := e.autoEncode(s, s.qualities)
	return data, a, nil, err
}

// pickSmallest is the candidate with the fewest bytes among those whose
// score meets its target (of gives bytes, score and target); when none
// does, the one with the best score.
func pickSmallest(cands []string, of func(string) (int, float64, float64)) string {
	best, bestBytes := "", 0
	for _, f := range cands {
		n, score, target := of(f)
		if score >= target && (best == "" || n < bestBytes) {
			best, bestBytes = f, n
		}
	}
	if best != "" {
		return best
	}
	bestScore := -1e9
	for _, f := range cands {
		if _, score, _ := of(f); score > bestScore {
			best, bestScore = f, score
		}
	}
	return best
}
