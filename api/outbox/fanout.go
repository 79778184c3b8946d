package outbox

import (
	"context"
	"slices"
	"time"

	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/engine/schema"
	"github.com/vitrine/vitrine/storage"
)

// fanout is where each event goes: a delivery row per sink that wants it.
type fanout struct {
	db *storage.DB
	// webhooks is false when webhooks are off.
	webhooks bool
	// topics are the sinks of events.topics: every event goes to each.
	topics []string
	// tags names what an event purges; purgers are the purgers' sinks.
	tags    cdn.Tags
	purgers []string
	// d sends the deliveries: those it takes at once are written taken
	// and handed to it (EventFanout.Take).
	d *dispatcher
}

// eventRetry bounds the backoff of an event whose fan-out failed (the
// subscriptions could not be read): short, since a subject's later
// events wait behind it.
var eventRetry = storage.JobPass{RetryMin: time.Second, RetryMax: time.Minute}

// pass fans the events due out (storage.DB.DrainEventsTo): one delivery
// per sink that wants each, written taken by the dispatcher where it has
// a free slot for the sink (so it sends them at once, with no read and
// claim of its own).
func (f *fanout) pass(ctx context.Context) (int, error) {
	hooks := f.subscriptions()
	return f.db.DrainEventsTo(ctx, eventRetry, func(ctx context.Context, e storage.Event) ([]string, error) {
		// An instance that cannot read the subscriptions (a `secret`
		// unlike the other instances') fans out nothing, rather than an
		// event without the subscriptions that want it.
		list, err := hooks(ctx, e)
		if err != nil {
			return nil, err
		}
		return f.sinksOf(e, list), nil
	}, f.d.fanout(ctx))
}

// sinksOf returns the sinks that want e, of the subscriptions hooks.
func (f *fanout) sinksOf(e storage.Event, hooks []storage.Webhook) []string {
	out := slices.Clone(f.topics)
	for _, h := range hooks {
		if webhookWants(h, e) {
			out = append(out, storage.WebhookSink(h.ID))
		}
	}
	if len(f.purgers) > 0 && len(f.tags.PurgeTags(e.Type, e.Subject, e.Data)) > 0 {
		out = append(out, f.purgers...)
	}
	return out
}

// subscriptions returns what gives the subscriptions to match an event
// against during one pass. It reads them again whenever an event is
// newer than the last read: a subscription made before a change then
// committed before it (the change's time is after that commit when one
// client makes both, one after the other), so the read that follows
// sees it. Events older than the read reuse it: one read per batch.
func (f *fanout) subscriptions() func(context.Context, storage.Event) ([]storage.Webhook, error) {
	var hooks []storage.Webhook
	var read time.Time
	return func(ctx context.Context, e storage.Event) ([]storage.Webhook, error) {
		if !f.webhooks || e.Time.Before(read) {
			return hooks, nil
		}
		at := time.Now()
		list, err := f.db.Webhooks(ctx)
		if err != nil {
			return nil, err
		}
		hooks, read = list, at
		return hooks, nil
	}
}

// webhookWants reports whether the subscription w receives e: active,
// made before e, one of its patterns matches e's type, and e belongs to
// one of its users (only "*" takes the events of no user).
func webhookWants(w storage.Webhook, e storage.Event) bool {
	if !w.Active || e.Time.Before(w.Created) {
		return false
	}
	typed := false
	for _, p := range w.Events {
		typed = typed || schema.MatchEvent(p, e.Type)
	}
	if !typed {
		return false
	}
	user := storage.ParseSubject(e.Subject).User
	for _, u := range w.Users {
		if u == "*" || (user != "" && u == user) {
			return true
		}
	}
	return false
}
