package storage

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The events outbox (migration step 17): every change the audit log
// records also writes, in the same transaction, one event row, so that a
// committed change always has its event and a rolled-back one never does.
// Any instance drains the rows (DrainEvents) in order per subject and
// hands each to its deliverer (a message bus, webhooks, CDN purges: the
// policy lives with the workers in package main). Rows are written only
// while SetEvents(true): an outbox that nothing drains would only grow.

// EventSource is the CloudEvents source of every event: the service, not
// the instance that made the change.
const EventSource = "/vitrine"

// Event is one change as CloudEvents 1.0 describes it.
type Event struct {
	// ID is stable: a redelivery of the event carries the same ID.
	ID string
	// Type is io.vitrine.<resource>.<verb> (eventKinds).
	Type string
	// Source is EventSource.
	Source string
	// Subject is users/<user>/images/<image> for a change to an image,
	// its metadata or its short URLs; keys/<public key> for a key and its
	// rules; groups/<name>; webhooks/<id>; blocklist/<id>; filters (a reload);
	// filters/<name> (a filter deployed through the API); users/<user>
	// for a user's erasure and quotas.
	Subject string
	// Time is when the change was made.
	Time time.Time
	// Data is a JSON object: the image record (as listings show it) for an
	// added image, else what names the thing changed and the change's
	// audit detail.
	Data json.RawMessage
	// Attempts is how many deliveries of the event were tried before.
	Attempts int
	// Traceparent is the W3C trace context of the change (its request's
	// or job's span) when it was traced; "" else.
	Traceparent string
}

// MarshalJSON writes e in CloudEvents' JSON format (structured mode).
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		SpecVersion     string          `json:"specversion"`
		ID              string          `json:"id"`
		Source          string          `json:"source"`
		Type            string          `json:"type"`
		Subject         string          `json:"subject"`
		Time            string          `json:"time"`
		DataContentType string          `json:"datacontenttype"`
		Data            json.RawMessage `json:"data"`
	}{"1.0", e.ID, e.Source, e.Type, e.Subject, e.Time.UTC().Format(time.RFC3339Nano), "application/json", e.Data})
}

// maxSubject is the longest subject the events table holds (MySQL's
// VARCHAR(600); a user and an identifier are at most 255 bytes each).
const maxSubject = 600

// eventRow is the events table.
type eventRow struct {
	bun.BaseModel `bun:"table:events,alias:ev"`

	ID          int64  `bun:"id,pk,autoincrement"`
	EventID     string `bun:"event_id"`
	Type        string `bun:"type"`
	Subject     string `bun:"subject"`
	At          int64  `bun:"at"` // unix microseconds
	Data        string `bun:"data"`
	Due         int64  `bun:"due"` // unix microseconds
	Attempts    int    `bun:"attempts"`
	LastError   string `bun:"last_error"`
	Traceparent string `bun:"traceparent"`
}

// dueEvents keeps the rows with no older row of their subject in the table
// (pending, failed and waiting for its retry, or being delivered), oldest
// first: so a subject's events go out one after the other, in the order
// their changes committed, whichever instance drains. Why the oldest of
// each subject by GROUP BY rather than NOT EXISTS an older row: PostgreSQL
// plans the latter as a hash anti-join whose cost is the square of one
// subject's backlog (32 ms for 1,000 events of one subject, 0.3 ms so).
func dueEvents(q *bun.SelectQuery) *bun.SelectQuery {
	return q.Where("ev.id IN (SELECT MIN(head.id) FROM events AS head GROUP BY head.subject)").
		OrderExpr("ev.id ASC")
}

func (r eventRow) event() Event {
	return Event{ID: r.EventID, Type: r.Type, Source: EventSource, Subject: r.Subject,
		Time: time.UnixMicro(r.At).UTC(), Data: json.RawMessage(r.Data), Attempts: r.Attempts, Traceparent: r.Traceparent}
}

// SetEvents turns the writing of event rows on or off (off when a DB
// opens). The caller decides: on while something drains them.
func (db *DB) SetEvents(on bool) { db.events.Store(on) }

// EventsWritten receives after a transaction that may have written events
// commits, while events are on (at most one signal waits): a drainer
// selects on it to deliver at once instead of at its next tick.
func (db *DB) EventsWritten() <-chan struct{} { return db.written }

// inTx runs fn in a transaction of a change that the audit log records
// (again while the database says to try again: runTx), and signals
// EventsWritten once it committed. Why after the commit: a
// drainer woken earlier would not see the rows yet, and sleep on them.
func (db *DB) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	if err := db.runTx(ctx, nil, fn); err != nil {
		return err
	}
	if db.events.Load() {
		select {
		case db.written <- struct{}{}:
		default:
		}
	}
	return nil
}

// writeEvent writes, through conn (the change's transaction), the event
// of the audited change ev made at at, when events are on. data, when not
// nil, is the event's data; else it is the names of what changed and ev's
// detail.
func (db *DB) writeEvent(ctx context.Context, conn bun.IDB, ev auditEvent, at time.Time, data map[string]any) error {
	if !db.events.Load() {
		return nil
	}
	kind, ok := eventKinds[ev.action]
	if !ok {
		return fmt.Errorf("event of %s: no event type: %w", ev.action, ErrInvalid)
	}
	subject, names := kind.subject(ev.target)
	if data == nil {
		data = names
		for k, v := range ev.detail {
			data[k] = v
		}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("event of %s: %w", ev.action, err)
	}
	row := &eventRow{EventID: newEventID(), Type: kind.typ, Subject: clip(subject, maxSubject),
		At: at.UnixMicro(), Data: string(b), Due: at.UnixMicro(), Traceparent: traceparent(ctx)}
	if _, err := conn.NewInsert().Model(row).Exec(ctx); err != nil {
		return fmt.Errorf("event of %s: %w", ev.action, err)
	}
	return nil
}

// traceparent is ctx's span context as a W3C traceparent value, "" when
// it has none (the change was not traced).
func traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// newEventID returns a random (version 4) UUID.
func newEventID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// imageData is the data of an added image's event: its record with the
// fields and formats of a listing's entry (api/openapi.yaml, ImageEntry).
func imageData(img *Image) map[string]any {
	var orig any
	if img.OriginalChecksum != "" {
		orig = img.OriginalChecksum
	}
	return map[string]any{"user": img.User, "imageIdentifier": img.Identifier, "extension": img.Extension,
		"mime": img.Mime, "mimeType": img.Mime, "size": img.Size, "width": img.Width, "height": img.Height,
		"checksum": img.Checksum, "originalChecksum": orig,
		"added": img.Added.UTC().Format(http.TimeFormat), "updated": img.Updated.UTC().Format(http.TimeFormat)}
}

// DrainEvents hands the events due now to deliver, oldest first, up to
// p.Limit (0: all). An event is not taken while an older event of its
// subject is in the table, so each subject's events are delivered one at
// a time in order. The events of a batch are taken together by a
// compare-and-swap on their due time that also pushes it past p's backoff,
// so two instances never deliver one at once and the event of an instance
// that dies is taken again later. An event deliver returns nil for is done
// (its row deleted); one it fails is tried again after the backoff, with
// the same ID, and its subject's later events wait for it. Delivery is at
// least once: a crash between deliver and the delete delivers again.
// DrainEvents passes again while a pass delivered something, so the events
// an earlier one held back go out in the same call; no event is handed to
// deliver twice in one call. It returns how many it delivered and the
// first error.
func (db *DB) DrainEvents(ctx context.Context, p JobPass, deliver func(context.Context, Event) error) (done int, firstErr error) {
	return db.DrainEventsTo(ctx, p, func(ctx context.Context, e Event) ([]string, error) {
		return nil, deliver(ctx, e)
	}, EventFanout{})
}

// EventFanout is what DrainEventsTo does with the sinks of each event
// delivered: a pending delivery per sink (storage/deliveries.go), written
// in the transaction that deletes the event, so that an event is never
// gone without its deliveries.
type EventFanout struct {
	// Take, when set, is asked for each sink of an event whose
	// subject has no older pending delivery to that sink whether the
	// caller will attempt the delivery itself at once. A delivery taken is
	// written claimed (its first attempt counted, hidden from every
	// instance for Lease, as ClaimDelivery leaves it), which saves the
	// caller a read and a claim per delivery.
	Take  func(sink string) bool
	Lease time.Duration
	// Written is called after each batch's transaction, committed or not,
	// with the deliveries written taken (none when it failed: then every
	// sink Take said yes to is the caller's to release) and how many were
	// written pending for a later pass.
	Written func(taken []Delivery, pending int)
}

// eventBatch is how many due events one pass takes.
const eventBatch = 64

// DrainEventsTo is DrainEvents whose deliver also returns the sinks the
// event goes to next, written as f says.
func (db *DB) DrainEventsTo(ctx context.Context, p JobPass, deliver func(context.Context, Event) ([]string, error), f EventFanout) (done int, firstErr error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	seen := map[int64]bool{}
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for p.Limit == 0 || done < p.Limit {
		batch := eventBatch
		if p.Limit > 0 {
			batch = min(batch, p.Limit-done)
		}
		var rows []eventRow
		q := db.bun.NewSelect().Model(&rows).Where("ev.due <= ?", time.Now().UnixMicro())
		if err := dueEvents(q).Limit(int64(batch)).Scan(ctx); err != nil {
			keep(fmt.Errorf("storage: due events: %w", err))
			return done, firstErr
		}
		rows = slices.DeleteFunc(rows, func(r eventRow) bool { return seen[r.ID] })
		for _, r := range rows {
			seen[r.ID] = true
		}
		taken, err := db.claimEvents(ctx, rows, p)
		keep(err)
		if len(taken) == 0 {
			return done, firstErr
		}
		outs := make([]eventOutcome, len(taken))
		for i, r := range taken {
			outs[i].row = r
			outs[i].sinks, outs[i].err = deliver(ctx, r.event())
			keep(outs[i].err)
		}
		n, err := db.completeEvents(ctx, outs, p, f)
		keep(err)
		done += n
		if n == 0 {
			return done, firstErr
		}
	}
	return done, firstErr
}

// claimEvents takes rows for one try: each due time is pushed past the
// backoff of its attempts (a lease: a crash retries it then) and its
// attempts counted, in one statement per number of attempts, on the
// condition that it is still due. It returns the rows it took: all of
// them, but for those another instance took first.
func (db *DB) claimEvents(ctx context.Context, rows []eventRow, p JobPass) ([]eventRow, error) {
	byAttempts := map[int][]int64{}
	for _, r := range rows {
		byAttempts[r.Attempts] = append(byAttempts[r.Attempts], r.ID)
	}
	now := time.Now()
	got := map[int64]bool{}
	for attempts, ids := range byAttempts {
		// The lease is shortened by a random part below a millisecond, so
		// that the rows this claim took are the ones holding exactly this
		// due time.
		lease := now.Add(p.backoff(attempts)).UnixMicro() - mrand.Int64N(1000)
		res, err := db.bun.NewUpdate().Model((*eventRow)(nil)).
			Set("attempts = attempts + 1").Set("due = ?", lease).
			Where("id IN (?) AND attempts = ? AND due <= ?", bun.List(ids), attempts, now.UnixMicro()).Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: take events: %w", err)
		}
		n, err := affected(res)
		if err != nil {
			return nil, err
		}
		if int(n) == len(ids) {
			for _, id := range ids {
				got[id] = true
			}
			continue
		}
		var mine []int64
		if err := db.bun.NewSelect().Model((*eventRow)(nil)).Column("id").
			Where("id IN (?) AND due = ?", bun.List(ids), lease).Scan(ctx, &mine); err != nil {
			return nil, fmt.Errorf("storage: take events: %w", err)
		}
		for _, id := range mine {
			got[id] = true
		}
	}
	return slices.DeleteFunc(rows, func(r eventRow) bool { return !got[r.ID] }), nil
}

// eventOutcome is one try of a taken event: the sinks it goes to next,
// or why it failed.
type eventOutcome struct {
	row   eventRow
	sinks []string
	err   error
}

// completeEvents ends the tries of outs in one transaction: a delivered
// event's row goes and its deliveries are written (f), a failed one keeps
// its row, due after its backoff, with the error. It returns how many were
// delivered.
func (db *DB) completeEvents(ctx context.Context, outs []eventOutcome, p JobPass, f EventFanout) (int, error) {
	var taken []Delivery
	pending, done := 0, 0
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var gone []int64
		var items []fanItem
		for _, o := range outs {
			if o.err != nil {
				if _, err := tx.NewUpdate().Model((*eventRow)(nil)).Set("last_error = ?", clip(o.err.Error(), 1000)).
					Where("id = ?", o.row.ID).Exec(ctx); err != nil {
					return err
				}
				continue
			}
			items = append(items, fanItem{o.row.event(), o.sinks})
			gone = append(gone, o.row.ID)
		}
		var err error
		if taken, pending, err = db.fanOut(ctx, tx, items, f); err != nil {
			return err
		}
		if len(gone) > 0 {
			if _, err := tx.NewDelete().Model((*eventRow)(nil)).Where("id IN (?)", bun.List(gone)).Exec(ctx); err != nil {
				return err
			}
		}
		done = len(gone)
		return nil
	})
	if err != nil {
		taken, pending, done = nil, 0, 0
		err = fmt.Errorf("storage: finish events: %w", err)
	}
	if f.Written != nil {
		f.Written(taken, pending)
	}
	return done, err
}

// PendingEvents returns up to limit of the events not yet delivered,
// oldest first (limit 0: all).
func (db *DB) PendingEvents(ctx context.Context, limit int) ([]Event, error) {
	var rows []eventRow
	q := db.bun.NewSelect().Model(&rows).OrderExpr("id ASC")
	if limit > 0 {
		q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: pending events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// NewEventID returns a new event id, as the outbox gives its events: for
// messages sent outside it (a webhook's test ping).
func NewEventID() string { return newEventID() }
