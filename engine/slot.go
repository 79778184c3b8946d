package engine

import "context"

// slot is the pipeline slot a render holds (Config.Concurrency of them). A
// guest step gives it up while it waits for and runs its WebAssembly filter,
// which has admission of its own, and takes one again before it hands the
// result back to libvips: a slow or hostile guest never holds a slot that
// native work needs. What the render has decoded so far stays in memory
// meanwhile; the guest's own admission (its instances and its bounded queue)
// bounds how many such renders wait.
type slot struct {
	e    *Engine
	held bool
}

type slotKey struct{}

// takeSlot waits for a pipeline slot; the caller ends with s.end. The
// render counts as running (Close waits for it) until then, whether it
// holds the slot or gave it up for a guest step.
func (e *Engine) takeSlot(ctx context.Context) (*slot, context.Context, error) {
	if err := e.acquire(ctx); err != nil {
		return nil, ctx, err
	}
	e.renders.Add(1)
	s := &slot{e: e, held: true}
	return s, context.WithValue(ctx, slotKey{}, s), nil
}

// end gives the slot up for good: the render is over.
func (s *slot) end() {
	s.release()
	s.e.renders.Done()
}

// slotOf returns the render's slot; nil outside a render (a step applied
// on its own, in tests).
func slotOf(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// release gives the slot up, until retake or for good; releasing a slot
// not held does nothing.
func (s *slot) release() {
	if s != nil && s.held {
		s.held = false
		s.e.release()
	}
}

// retake waits for a slot again after release.
func (s *slot) retake(ctx context.Context) error {
	if s == nil || s.held {
		return nil
	}
	if err := s.e.acquire(ctx); err != nil {
		return err
	}
	s.held = true
	return nil
}
