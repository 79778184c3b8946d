package filters

import "context"

// Listener is a loaded filter of kind listener: it handles the events its
// manifest names, at its priority. It satisfies what the api's event bus
// needs through a one-line adapter in package main (filters.go).
type Listener struct{ *Filter }

// Events are the event names and patterns the listener subscribes to.
func (l Listener) Events() []string { return l.manifest.Events }

// Priority orders listeners: higher runs first.
func (l Listener) Priority() int { return l.manifest.Priority }

// Handle runs the guest on ev. A rejection always fails the request, and so
// does the service's own failure to answer the guest (an upload that is not
// an image: the client gets the service's usual 4xx). When the service
// cannot describe the event itself, the guest is not called: event_get
// works in every call (ABI.md section 5). Any other failure
// does so only when the listener is fatal, and is otherwise
// logged and skipped, leaving ev as if the listener had not run. The
// guest's changes to ev are applied only when it succeeds.
func (l Listener) Handle(ctx context.Context, ev Event) error {
	obj, err := eventObject(ctx, ev)
	if err != nil {
		return err
	}
	c := &call{event: ev, eventJSON: obj}
	err = l.invoke(ctx, c)
	if err == nil {
		c.commit(l.Name())
		return nil
	}
	if isKind(err, KindRejected) || l.manifest.IsFatal() || ctx.Err() != nil || (c.serviceErr != nil && err == c.serviceErr) {
		return err
	}
	l.host.log.Warn("optional filter failed; skipped", "filter", l.Name(), "event", ev.EventName(), "err", err)
	return nil
}
