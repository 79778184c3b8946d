package engine

import "time"

// Observer receives how long each stage of a pipeline took: stage "decode"
// (name ""), "transform" (name: the transformation) or "encode" (name: the
// output format). libvips is lazy, so most pixel work shows up in encode.
// It is called on the request's goroutine and must be fast.
type Observer interface {
	ObserveStage(stage, name string, d time.Duration)
}

// SetObserver makes o receive stage timings; call it before Process is
// used. nil turns observing off.
func (e *Engine) SetObserver(o Observer) { e.observer = o }

// observe reports a stage that started at start.
func (e *Engine) observe(stage, name string, start time.Time) {
	if e.observer != nil {
		e.observer.ObserveStage(stage, name, time.Since(start))
	}
}

// Load returns how many pipelines run now and how many wait for a slot
// (the bound is Config.Concurrency).
func (e *Engine) Load() (running, waiting int) {
	return len(e.sem), int(e.waiting.Load())
}
