package storage

import (
	"context"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// How the deliveries of deliveries.go are written and finished in bulk:
// an events pass writes every delivery of its batch with one insert, and
// the outcomes that end alike are recorded with one update.

// fanItem is an event and the sinks it goes to.
type fanItem struct {
	e     Event
	sinks []string
}

// fanChunk is how many deliveries one insert writes: under every
// database's bound on a statement's parameters.
const fanChunk = 256

// fanOut writes, through tx, a delivery of each item's event to each of
// its sinks, in the order given: taken (see EventFanout.Take) where f
// takes it and the sink has no older pending delivery of the event's
// subject, so that a subject's deliveries to a sink stay in order; else
// pending, due now. It returns the deliveries written taken and how many
// were written pending. One read of the subjects' pending deliveries, one
// insert per fanChunk deliveries and, for those taken, one read of their
// ids: the statements do not grow with the sinks.
func (db *DB) fanOut(ctx context.Context, tx bun.Tx, items []fanItem, f EventFanout) ([]Delivery, int, error) {
	var sinks, subjects []string
	for _, it := range items {
		for _, s := range it.sinks {
			if err := checkLen("sink", s, maxSink, true); err != nil {
				return nil, 0, err
			}
			if !slices.Contains(sinks, s) {
				sinks = append(sinks, s)
			}
		}
		if len(it.sinks) > 0 && !slices.Contains(subjects, it.e.Subject) {
			subjects = append(subjects, it.e.Subject)
		}
	}
	if len(sinks) == 0 {
		return nil, 0, nil
	}
	type head struct{ sink, subject string }
	busy := map[head]bool{}
	if f.Take != nil {
		var heads []struct {
			Sink    string `bun:"sink"`
			Subject string `bun:"subject"`
		}
		if err := tx.NewSelect().Model((*deliveryRow)(nil)).Column("sink", "subject").Distinct().
			Where("state = 0 AND subject IN (?) AND sink IN (?)", bun.List(subjects), bun.List(sinks)).
			Scan(ctx, &heads); err != nil {
			return nil, 0, err
		}
		for _, h := range heads {
			busy[head{h.Sink, h.Subject}] = true
		}
	}
	now := time.Now()
	var rows []deliveryRow
	var take []bool
	pending := 0
	for _, it := range items {
		e := it.e
		for _, s := range it.sinks {
			row := deliveryRow{Sink: s, EventID: e.ID, Type: e.Type, Subject: e.Subject, At: e.Time.UnixMicro(),
				Data: string(e.Data), Created: now.UnixMicro(), Due: now.UnixMicro(), Traceparent: e.Traceparent}
			// A delivery written, taken or not, is pending: the
			// subject's next one to the sink waits behind it.
			h := head{s, e.Subject}
			t := !busy[h] && f.Take != nil && f.Take(s)
			busy[h] = true
			if t {
				row.Attempts, row.Due = 1, now.Add(f.Lease).UnixMicro()
			} else {
				pending++
			}
			rows, take = append(rows, row), append(take, t)
		}
	}
	ids, err := db.insertDeliveries(ctx, tx, rows, slices.Contains(take, true))
	if err != nil {
		return nil, 0, err
	}
	var taken []Delivery
	for i, row := range rows {
		// A row that was there already (a fan-out repeated after a
		// crash) has no id here: it is not this fan-out's to attempt.
		id, ok := ids[sinkEvent{row.Sink, row.EventID}]
		if !take[i] || !ok {
			continue
		}
		row.ID = id
		d := row.delivery()
		d.Attempts = 0 // the attempts before this one, as DueDeliveries gives them
		taken = append(taken, d)
	}
	return taken, pending, nil
}

// sinkEvent names a delivery: its sink and its event's id.
type sinkEvent struct{ sink, event string }

// insertDeliveries writes rows through tx, but for those whose sink has
// their event already. With withIDs it returns the ids of the rows it
// wrote, by sink and event id (the keys of deliveries_sink_event).
func (db *DB) insertDeliveries(ctx context.Context, tx bun.Tx, rows []deliveryRow, withIDs bool) (map[sinkEvent]int64, error) {
	type written struct {
		ID      int64  `bun:"id"`
		Sink    string `bun:"sink"`
		EventID string `bun:"event_id"`
	}
	var got []written
	for chunk := range slices.Chunk(rows, fanChunk) {
		q := db.insertIgnore(tx.NewInsert().Model(&chunk), "event_id")
		// Why not the ids bun sets on the models: an insert that skips a
		// row there already would shift them. RETURNING names each row
		// it wrote; MySQL has none, and the rows are read back below.
		if withIDs && db.kind != mysqlKind {
			var w []written
			if err := q.Returning("id, sink, event_id").Scan(ctx, &w); err != nil {
				return nil, err
			}
			got = append(got, w...)
			continue
		}
		if _, err := q.Returning("NULL").Exec(ctx); err != nil {
			return nil, err
		}
	}
	if withIDs && db.kind == mysqlKind {
		var sinks, events []string
		for _, r := range rows {
			sinks, events = append(sinks, r.Sink), append(events, r.EventID)
		}
		// Created tells this fan-out's rows from those an earlier one
		// wrote: every row of one fan-out has the same microsecond.
		if err := tx.NewSelect().Model((*deliveryRow)(nil)).Column("id", "sink", "event_id").
			Where("sink IN (?) AND event_id IN (?) AND created = ?", bun.List(sinks), bun.List(events), rows[0].Created).
			Scan(ctx, &got); err != nil {
			return nil, err
		}
	}
	ids := make(map[sinkEvent]int64, len(got))
	for _, w := range got {
		ids[sinkEvent{w.Sink, w.EventID}] = w.ID
	}
	return ids, nil
}

// finishGroups moves the deliveries of outcomes to their states, one
// update for all that end alike (the deliveries of a change that every
// receiver took), and returns the ids it found.
func (db *DB) finishGroups(ctx context.Context, tx bun.Tx, outcomes []DeliveryOutcome) (map[int64]bool, error) {
	type end struct {
		state, status int
		err           string
		due           int64
	}
	var order []end
	groups := map[end][]int64{}
	for _, o := range outcomes {
		k := end{state: int(o.State), status: o.Attempt.Status, err: clip(o.Attempt.Error, 1000)}
		if o.State == DeliveryPending {
			k.due = o.Retry.UnixMicro()
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], o.ID)
	}
	now := time.Now().UnixMicro()
	found := make(map[int64]bool, len(outcomes))
	for _, k := range order {
		ids := groups[k]
		q := tx.NewUpdate().Model((*deliveryRow)(nil)).Where("id IN (?)", bun.List(ids)).Set("last_status = ?", k.status).
			Set("last_error = ?", k.err).Set("state = ?", k.state)
		if k.state == int(DeliveryPending) {
			q = q.Set("due = ?", k.due)
		} else {
			q = q.Set("finished = ?", now)
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return nil, err
		}
		n, err := affected(res)
		if err != nil {
			return nil, err
		}
		if int(n) < len(ids) {
			// Some are gone (their sink deleted): read which are left.
			var left []int64
			if err := tx.NewSelect().Model((*deliveryRow)(nil)).Column("id").
				Where("id IN (?)", bun.List(ids)).Scan(ctx, &left); err != nil {
				return nil, err
			}
			ids = left
		}
		for _, id := range ids {
			found[id] = true
		}
	}
	return found, nil
}
