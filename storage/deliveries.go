package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/uptrace/bun"
)

// Deliveries (migration step 18) are the events outbox fanned out: one row
// per event and sink, a sink being whatever an event goes to on its own
// schedule (a webhook subscription, a CDN purger), so that one receiver
// that is down holds back nothing but its own events. FanOut writes them;
// any instance takes the due ones (DueDeliveries, ClaimDelivery) in order
// per sink and subject and records each attempt (FinishDelivery), which
// stay, with the delivery, as the sink's log until PurgeDeliveries.
// When to retry and when to give up is the caller's policy.

// WebhookSink is the sink of the webhook subscription id.
func WebhookSink(id string) string { return "webhook:" + id }

// DeliveryState is where a delivery is.
type DeliveryState int

const (
	// DeliveryPending is waiting for its first or next attempt.
	DeliveryPending DeliveryState = iota
	// DeliveryDone was delivered.
	DeliveryDone
	// DeliveryFailed was given up on after its last attempt failed.
	DeliveryFailed
)

// String is the state's name in the API: pending, delivered or failed.
func (s DeliveryState) String() string {
	switch s {
	case DeliveryDone:
		return "delivered"
	case DeliveryFailed:
		return "failed"
	}
	return "pending"
}

// Delivery is one event on its way to one sink.
type Delivery struct {
	ID    int64
	Sink  string
	Event Event
	// Created is when it was fanned out (or redelivered): the start of
	// its retry window.
	Created  time.Time
	Due      time.Time
	Attempts int
	State    DeliveryState
	// Finished is when it was delivered or given up on.
	Finished time.Time
	// LastStatus is the HTTP status of the last attempt (0: none, or no
	// answer); LastError what went wrong with it.
	LastStatus int
	LastError  string
	// Log is its attempts, oldest first (Deliveries and Delivery only).
	Log []DeliveryAttempt
}

// DeliveryAttempt is one try of a delivery.
type DeliveryAttempt struct {
	At       time.Time
	Status   int
	Latency  time.Duration
	Response string // the first bytes of the answer
	Error    string
}

type deliveryRow struct {
	bun.BaseModel `bun:"table:deliveries,alias:d"`

	ID          int64  `bun:"id,pk,autoincrement"`
	Sink        string `bun:"sink"`
	EventID     string `bun:"event_id"`
	Type        string `bun:"type"`
	Subject     string `bun:"subject"`
	At          int64  `bun:"at"`
	Data        string `bun:"data"`
	Created     int64  `bun:"created"`
	Due         int64  `bun:"due"`
	Attempts    int    `bun:"attempts"`
	State       int    `bun:"state"`
	Finished    int64  `bun:"finished"`
	LastStatus  int    `bun:"last_status"`
	LastError   string `bun:"last_error"`
	Traceparent string `bun:"traceparent"`
}

type attemptRow struct {
	bun.BaseModel `bun:"table:delivery_attempts"`

	ID         int64  `bun:"id,pk,autoincrement"`
	DeliveryID int64  `bun:"delivery_id"`
	At         int64  `bun:"at"`
	Status     int    `bun:"status"`
	Latency    int64  `bun:"latency"` // microseconds
	Response   string `bun:"response"`
	Error      string `bun:"error"`
}

func (r deliveryRow) delivery() Delivery {
	ev := eventRow{EventID: r.EventID, Type: r.Type, Subject: r.Subject, At: r.At, Data: r.Data, Traceparent: r.Traceparent}.event()
	return Delivery{ID: r.ID, Sink: r.Sink, Event: ev, Created: time.UnixMicro(r.Created).UTC(),
		Due: time.UnixMicro(r.Due).UTC(), Attempts: r.Attempts, State: DeliveryState(r.State),
		Finished: createdTime(r.Finished), LastStatus: r.LastStatus, LastError: r.LastError}
}

// maxSink is the longest sink name.
const maxSink = 128

// FanOut writes one pending delivery of e to each of sinks, due now, in one
// transaction. A sink that already has e (a fan-out repeated after a crash)
// gets nothing new.
func (db *DB) FanOut(ctx context.Context, e Event, sinks []string) error {
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, _, err := db.fanOut(ctx, tx, []fanItem{{e, sinks}}, EventFanout{})
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: fan out event %s: %w", e.ID, err)
	}
	return nil
}

// DueDeliveries returns up to limit pending deliveries due now, oldest
// first, each the oldest pending one of its sink and subject (so that a
// subject's events reach a sink one after the other, in order), leaving
// out the sinks in skip (the caller's busy ones).
func (db *DB) DueDeliveries(ctx context.Context, limit int, skip []string) ([]Delivery, error) {
	var rows []deliveryRow
	q := db.bun.NewSelect().Model(&rows).
		Where("d.id IN (SELECT MIN(h.id) FROM deliveries AS h WHERE h.state = 0 GROUP BY h.sink, h.subject)").
		Where("d.due <= ?", time.Now().UnixMicro())
	if len(skip) > 0 {
		q = q.Where("d.sink NOT IN (?)", bun.List(skip))
	}
	if err := q.OrderExpr("d.id ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: due deliveries: %w", err)
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = r.delivery()
	}
	return out, nil
}

// ClaimDelivery takes d for an attempt by a compare-and-swap on its
// attempts, hiding it from every instance for lease (after which, if the
// attempt never finished, any instance takes it again). false, nil when
// another instance took it first.
func (db *DB) ClaimDelivery(ctx context.Context, d Delivery, lease time.Duration) (bool, error) {
	res, err := db.bun.NewUpdate().Model((*deliveryRow)(nil)).
		Set("attempts = attempts + 1").
		Set("due = ?", time.Now().Add(lease).UnixMicro()).
		Where("id = ? AND attempts = ? AND state = 0", d.ID, d.Attempts).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("storage: claim delivery %d: %w", d.ID, err)
	}
	n, err := affected(res)
	return n == 1, err
}

// FinishDelivery records attempt a of the delivery id and moves the
// delivery to state: pending again (due at retry), done or failed. A
// delivery that is gone (its sink deleted during the attempt) records
// nothing and is no error.
func (db *DB) FinishDelivery(ctx context.Context, id int64, a DeliveryAttempt, state DeliveryState, retry time.Time) error {
	return db.FinishDeliveries(ctx, []DeliveryOutcome{{ID: id, Attempt: a, State: state, Retry: retry}})
}

// DeliveryOutcome is how an attempt of the delivery ID ended: the attempt,
// and the state the delivery moves to (pending again due at Retry, done or
// failed).
type DeliveryOutcome struct {
	ID      int64
	Attempt DeliveryAttempt
	State   DeliveryState
	Retry   time.Time
}

// FinishDeliveries records outcomes as FinishDelivery does, in one
// transaction.
func (db *DB) FinishDeliveries(ctx context.Context, outcomes []DeliveryOutcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	ids := make([]int64, len(outcomes))
	for i, o := range outcomes {
		ids[i] = o.ID
	}
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// Why the deliveries' updates before their attempts' rows: an
		// attempt written for a delivery that a sink's delete just
		// removed would be a row nothing purges; the update finds no row
		// then, and its lock orders this after such a delete.
		found, err := db.finishGroups(ctx, tx, outcomes)
		if err != nil {
			return err
		}
		var rows []attemptRow
		for _, o := range outcomes {
			if !found[o.ID] {
				continue
			}
			a := o.Attempt
			rows = append(rows, attemptRow{DeliveryID: o.ID, At: a.At.UnixMicro(), Status: a.Status,
				Latency: a.Latency.Microseconds(), Response: clip(a.Response, 1024), Error: clip(a.Error, 1000)})
		}
		if len(rows) == 0 {
			return nil
		}
		_, err = tx.NewInsert().Model(&rows).Returning("NULL").Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: finish deliveries %v: %w", ids, err)
	}
	return nil
}

// DeliveryQuery selects deliveries of one sink; zero fields do not filter.
type DeliveryQuery struct {
	// State, when Filter is true, keeps the deliveries in that state.
	State  DeliveryState
	Filter bool
	// Page is 1-based; Limit 0 means 20.
	Page, Limit int
}

// Deliveries returns one page of sink's deliveries matching q, newest
// first, each with its attempts, and how many match in all.
func (db *DB) Deliveries(ctx context.Context, sink string, q DeliveryQuery) ([]Delivery, int, error) {
	q.Page, q.Limit = max(q.Page, 1), cmpOr(q.Limit, 20)
	var rows []deliveryRow
	sel := db.bun.NewSelect().Model(&rows).Where("d.sink = ?", sink)
	if q.Filter {
		sel = sel.Where("d.state = ?", int(q.State))
	}
	n, err := sel.OrderExpr("d.id DESC").Limit(int64(q.Limit)).Offset(int64((q.Page - 1) * q.Limit)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("storage: deliveries of %s: %w", sink, err)
	}
	out, err := db.withAttempts(ctx, rows)
	return out, int(n), err
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Delivery returns sink's delivery id with its attempts; ErrNotExist when
// it has none of that id.
func (db *DB) Delivery(ctx context.Context, sink string, id int64) (Delivery, error) {
	var row deliveryRow
	err := db.bun.NewSelect().Model(&row).Where("d.sink = ? AND d.id = ?", sink, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Delivery{}, fmt.Errorf("storage: delivery %d: %w", id, ErrNotExist)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("storage: delivery %d: %w", id, err)
	}
	out, err := db.withAttempts(ctx, []deliveryRow{row})
	if err != nil {
		return Delivery{}, err
	}
	return out[0], nil
}

// withAttempts turns rows into deliveries with their attempts, in one
// query.
func (db *DB) withAttempts(ctx context.Context, rows []deliveryRow) ([]Delivery, error) {
	out := make([]Delivery, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]int64, len(rows))
	at := map[int64]int{}
	for i, r := range rows {
		out[i], ids[i], at[r.ID] = r.delivery(), r.ID, i
	}
	var attempts []attemptRow
	if err := db.bun.NewSelect().Model(&attempts).Where("delivery_id IN (?)", bun.List(ids)).
		OrderExpr("id ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: delivery attempts: %w", err)
	}
	for _, a := range attempts {
		d := &out[at[a.DeliveryID]]
		d.Log = append(d.Log, DeliveryAttempt{At: time.UnixMicro(a.At).UTC(), Status: a.Status,
			Latency: time.Duration(a.Latency) * time.Microsecond, Response: a.Response, Error: a.Error})
	}
	return out, nil
}

// ErrPending: a delivery asked to be sent again has not finished yet.
var ErrPending = &Error{"storage: delivery still pending", http.StatusConflict, "The delivery is still pending"}

// Redeliver makes sink's finished delivery id pending again, due now, with
// a new retry window; its log stays. ErrNotExist when there is no such
// delivery, ErrPending when it has not finished.
func (db *DB) Redeliver(ctx context.Context, sink string, id int64) error {
	now := time.Now().UnixMicro()
	res, err := db.bun.NewUpdate().Model((*deliveryRow)(nil)).
		Set("state = 0").Set("due = ?", now).Set("created = ?", now).Set("attempts = 0").Set("finished = 0").
		Where("sink = ? AND id = ? AND state <> 0", sink, id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("storage: redeliver %d: %w", id, err)
	}
	if n, err := affected(res); err != nil || n == 1 {
		return err
	}
	if _, err := db.Delivery(ctx, sink, id); err != nil {
		return err
	}
	return fmt.Errorf("storage: redeliver %d: %w", id, ErrPending)
}

// PurgeDeliveries deletes the deliveries finished before before, with
// their attempts, and returns how many went. Pending ones stay.
func (db *DB) PurgeDeliveries(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		old := tx.NewSelect().Model((*deliveryRow)(nil)).Column("id").
			Where("state <> 0 AND finished < ?", before.UnixMicro())
		if _, err := tx.NewDelete().Model((*attemptRow)(nil)).Where("delivery_id IN (?)", old).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*deliveryRow)(nil)).
			Where("state <> 0 AND finished < ?", before.UnixMicro()).Exec(ctx)
		if err != nil {
			return err
		}
		n, err = affected(res)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("storage: purge deliveries: %w", err)
	}
	return n, nil
}

// deleteSink deletes every delivery of sink and its attempts, through tx.
func (db *DB) deleteSink(ctx context.Context, tx bun.Tx, sink string) error {
	ids := tx.NewSelect().Model((*deliveryRow)(nil)).Column("id").Where("sink = ?", sink)
	if _, err := tx.NewDelete().Model((*attemptRow)(nil)).Where("delivery_id IN (?)", ids).Exec(ctx); err != nil {
		return err
	}
	_, err := tx.NewDelete().Model((*deliveryRow)(nil)).Where("sink = ?", sink).Exec(ctx)
	return err
}

// SinkBacklog is where one sink stands: its pending deliveries, since when
// the oldest of them waits, and how many were given up on (still in the
// log).
type SinkBacklog struct {
	Pending int
	Oldest  time.Time
	Failed  int
}

// SinkBacklogs returns the backlog of every sink that has pending or
// failed deliveries, by sink, in one query.
func (db *DB) SinkBacklogs(ctx context.Context) (map[string]SinkBacklog, error) {
	var rows []struct {
		Sink    string `bun:"sink"`
		State   int    `bun:"state"`
		N       int    `bun:"n"`
		Created int64  `bun:"created"`
	}
	err := db.bun.NewSelect().Model((*deliveryRow)(nil)).
		ColumnExpr("sink, state, COUNT(*) AS n, MIN(created) AS created").
		Where("state <> ?", int(DeliveryDone)).GroupExpr("sink, state").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("storage: sink backlogs: %w", err)
	}
	out := map[string]SinkBacklog{}
	for _, r := range rows {
		b := out[r.Sink]
		if DeliveryState(r.State) == DeliveryPending {
			b.Pending, b.Oldest = r.N, time.UnixMicro(r.Created).UTC()
		} else {
			b.Failed = r.N
		}
		out[r.Sink] = b
	}
	return out, nil
}
