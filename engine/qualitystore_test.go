package engine

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// qualityList is a QualityStore over a list, which keeps answers as
// storage does (one per format and size class) and counts its calls.
type qualityList struct {
	mu            sync.Mutex
	answers       []QualityAnswer
	reads, writes int
}

func (l *qualityList) Qualities(context.Context) []QualityAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	return slices.Clone(l.answers)
}

func (l *qualityList) SetQuality(_ context.Context, a QualityAnswer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	l.answers = slices.DeleteFunc(l.answers, func(b QualityAnswer) bool { return b.Format == a.Format && b.Class == a.Class })
	l.answers = append(l.answers, a)
}

var _ QualityStore = (*qualityList)(nil)

// TestQualityStore checks how a render uses Request.Qualities: not at all
// without auto quality; with it, one read, and the answer its search found
// stored, which the next render at that size class takes (one encode, no
// write); a best-format render stores every candidate it searched.
func TestQualityStore(t *testing.T) {
	e := newTestEngine(t, Config{})
	src := source(t, 200, 150, "png", false)
	parse := func(ts ...string) Chain {
		t.Helper()
		c, err := e.ParseChain(ts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	process := func(req Request) *Result {
		t.Helper()
		res, err := e.Process(context.Background(), src, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("no auto quality", func(t *testing.T) {
		qs := &qualityList{}
		process(Request{Chain: parse("resize:width=100"), Format: "jpg", Qualities: qs})
		process(Request{Chain: parse("compress:level=50"), Format: "webp", Qualities: qs})
		if qs.reads != 0 || qs.writes != 0 {
			t.Errorf("%d reads, %d writes; want none", qs.reads, qs.writes)
		}
	})
	t.Run("search then stored", func(t *testing.T) {
		qs := &qualityList{}
		c := parse("resize:width=100", "compress:level=auto")
		res := process(Request{Chain: c, Format: "jpg", Qualities: qs})
		if res.Quality == nil || qs.reads != 1 || !reflect.DeepEqual(qs.answers, []QualityAnswer{*res.Quality}) {
			t.Fatalf("after a search: answer %+v, %d reads, stored %+v", res.Quality, qs.reads, qs.answers)
		}
		again := process(Request{Chain: parse("resize:width=90", "compress:level=auto"), Format: "jpg", Qualities: qs})
		if !strings.Contains(again.Headers["Quality"], "; stored; ") || again.Quality != nil || qs.reads != 2 || qs.writes != 1 {
			t.Errorf("again: header %q, answer %+v, %d reads, %d writes", again.Headers["Quality"], again.Quality, qs.reads, qs.writes)
		}
	})
	t.Run("request form", func(t *testing.T) {
		qs := &qualityList{}
		auto := ""
		res := process(Request{Chain: parse("resize:width=100"), Format: "webp", AutoQuality: &auto, Qualities: qs})
		if res.Quality == nil || qs.reads != 1 || qs.writes != 1 {
			t.Errorf("quality=auto: answer %+v, %d reads, %d writes", res.Quality, qs.reads, qs.writes)
		}
	})
	t.Run("best format", func(t *testing.T) {
		formats := AutoQualityFormats()
		if len(formats) < 2 {
			t.Skip("fewer than two auto-quality formats in this libvips")
		}
		qs := &qualityList{}
		res := process(Request{Chain: parse("resize:width=100", "compress:level=auto"), Format: "jpg", Formats: formats, Qualities: qs})
		want := append([]QualityAnswer{*res.Quality}, res.Searched...)
		if len(want) != len(formats) || !reflect.DeepEqual(qs.answers, want) {
			t.Errorf("stored %+v, want the chosen then the searched %+v", qs.answers, want)
		}
	})
}
