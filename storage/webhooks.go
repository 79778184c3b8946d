package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Webhook is a subscription: the events (types, wildcards allowed) of the
// users it names are delivered to its URL, signed with its secret.
type Webhook struct {
	// ID names it in /webhooks/<id>; the store's caller chooses it.
	ID  string
	URL string
	// Events are event type patterns ("io.vitrine.image.*", "*").
	Events []string
	// Users are the users whose events it receives; "*" is every user and
	// the events that belong to no user (keys, groups, filters).
	Users []string
	// Secret signs every delivery ("whsec_" and base64). With
	// Options.Secret it is encrypted at rest, as private keys are.
	Secret      string
	Description string
	// Active is false for a subscription that is paused: its events are
	// not fanned out to it.
	Active bool
	// FailingSince is when a delivery to it last gave up after every
	// retry, zero while deliveries succeed.
	FailingSince     time.Time
	Created, Updated time.Time
}

// webhookRow is the webhooks table.
type webhookRow struct {
	bun.BaseModel `bun:"table:webhooks"`

	ID           string `bun:"id,pk"`
	URL          string `bun:"url"`
	Events       string `bun:"events"` // JSON array
	Users        string `bun:"users"`  // JSON array
	Secret       string `bun:"secret"`
	Description  string `bun:"description"`
	Active       bool   `bun:"active"`
	FailingSince int64  `bun:"failing_since"` // unix microseconds, 0 when not failing
	Created      int64  `bun:"created"`
	Updated      int64  `bun:"updated"`
}

// Length limits of a subscription, the same on every dialect.
const (
	maxWebhookID   = 64
	maxWebhookURL  = 2048
	maxWebhookList = 64 // patterns or users
	maxDescription = 1024
)

// webhookAD is what a webhook's sealed secret is bound to, so that it
// cannot be moved to another row or taken for a private key.
func webhookAD(id string) string { return "webhook:" + id }

func (db *DB) webhookRow(w Webhook) (*webhookRow, error) {
	for _, c := range []struct {
		what, v string
		max     int
	}{{"webhook id", w.ID, maxWebhookID}, {"webhook url", w.URL, maxWebhookURL},
		{"webhook secret", w.Secret, 512}} {
		if err := checkLen(c.what, c.v, c.max, true); err != nil {
			return nil, err
		}
	}
	if err := checkLen("webhook description", w.Description, maxDescription, false); err != nil {
		return nil, err
	}
	if len(w.Events) == 0 || len(w.Events) > maxWebhookList || len(w.Users) == 0 || len(w.Users) > maxWebhookList {
		return nil, fmt.Errorf("storage: webhook %s: 1 to %d event patterns and users: %w", w.ID, maxWebhookList, ErrInvalid)
	}
	events, _ := json.Marshal(w.Events) // []string never fails
	users, _ := json.Marshal(w.Users)
	secret, err := db.sealKey(webhookAD(w.ID), w.Secret)
	if err != nil {
		return nil, err
	}
	return &webhookRow{ID: w.ID, URL: w.URL, Events: string(events), Users: string(users), Secret: secret,
		Description: w.Description, Active: w.Active, FailingSince: unixMicroOrZero(w.FailingSince),
		Created: unixMicroOrZero(w.Created), Updated: unixMicroOrZero(w.Updated)}, nil
}

func unixMicroOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func (db *DB) webhook(r webhookRow) (Webhook, error) {
	w := Webhook{ID: r.ID, URL: r.URL, Description: r.Description, Active: r.Active,
		FailingSince: createdTime(r.FailingSince), Created: createdTime(r.Created), Updated: createdTime(r.Updated)}
	if err := json.Unmarshal([]byte(r.Events), &w.Events); err != nil {
		return Webhook{}, fmt.Errorf("webhook %s events: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(r.Users), &w.Users); err != nil {
		return Webhook{}, fmt.Errorf("webhook %s users: %w", r.ID, err)
	}
	secret, err := db.openKey(webhookAD(r.ID), r.Secret)
	if err != nil {
		return Webhook{}, fmt.Errorf("webhook %s: %w", r.ID, err)
	}
	w.Secret = secret
	return w, nil
}

// webhookDetail is what the audit log and the event say of a
// subscription: never its secret.
func webhookDetail(w Webhook) map[string]any {
	return map[string]any{"url": w.URL, "events": w.Events, "users": w.Users, "active": w.Active}
}

// CreateWebhook stores w (Created and Updated set to now); ErrExist when
// its ID is taken.
func (db *DB) CreateWebhook(ctx context.Context, w *Webhook) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	w.Created, w.Updated = now, now
	row, err := db.webhookRow(*w)
	if err != nil {
		return err
	}
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := db.insertIgnore(tx.NewInsert().Model(row), "id").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := affected(res); err != nil || n == 0 {
			return errors.Join(err, ErrExist)
		}
		return db.audit(ctx, tx, auditEvent{"webhook.create", w.ID, webhookDetail(*w)})
	})
	if err != nil {
		return fmt.Errorf("storage: create webhook %s: %w", w.ID, err)
	}
	return nil
}

// UpdateWebhook replaces the URL, events, users, description and active
// flag of the subscription w.ID (its secret and creation time stay);
// ErrNotExist when there is none. Turning a subscription active again
// clears its failing mark.
func (db *DB) UpdateWebhook(ctx context.Context, w *Webhook) error {
	w.Updated = time.Now().UTC().Truncate(time.Microsecond)
	w.Secret = "-" // not written; webhookRow checks it is present
	row, err := db.webhookRow(*w)
	if err != nil {
		return err
	}
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model(row).Column("url", "events", "users", "description", "active", "updated").WherePK()
		if w.Active {
			q = q.Set("failing_since = 0")
		}
		if err := deleted(q.Exec(ctx)); err != nil {
			return err
		}
		return db.audit(ctx, tx, auditEvent{"webhook.update", w.ID, webhookDetail(*w)})
	})
	if err != nil {
		return fmt.Errorf("storage: update webhook %s: %w", w.ID, err)
	}
	got, err := db.Webhook(ctx, w.ID)
	if err != nil {
		return err
	}
	*w = got
	return nil
}

// DeleteWebhook deletes the subscription id with its deliveries, pending
// and logged; ErrNotExist when there is none.
func (db *DB) DeleteWebhook(ctx context.Context, id string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := deleted(tx.NewDelete().Model((*webhookRow)(nil)).Where("id = ?", id).Exec(ctx)); err != nil {
			return err
		}
		if err := db.deleteSink(ctx, tx, WebhookSink(id)); err != nil {
			return err
		}
		return db.audit(ctx, tx, auditEvent{"webhook.delete", id, nil})
	})
	if err != nil {
		return fmt.Errorf("storage: delete webhook %s: %w", id, err)
	}
	return nil
}

// Webhook returns the subscription id; ErrNotExist when there is none.
func (db *DB) Webhook(ctx context.Context, id string) (Webhook, error) {
	var row webhookRow
	err := db.bun.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Webhook{}, fmt.Errorf("storage: webhook %s: %w", id, ErrNotExist)
	}
	if err != nil {
		return Webhook{}, fmt.Errorf("storage: webhook %s: %w", id, err)
	}
	w, err := db.webhook(row)
	if err != nil {
		return Webhook{}, fmt.Errorf("storage: %w", err)
	}
	return w, nil
}

// Webhooks returns every subscription, oldest first.
func (db *DB) Webhooks(ctx context.Context) ([]Webhook, error) {
	var rows []webhookRow
	if err := db.bun.NewSelect().Model(&rows).OrderExpr("created ASC, id ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("storage: webhooks: %w", err)
	}
	out := make([]Webhook, 0, len(rows))
	for _, r := range rows {
		w, err := db.webhook(r)
		if err != nil {
			return nil, fmt.Errorf("storage: %w", err)
		}
		out = append(out, w)
	}
	return out, nil
}

// SetWebhookFailing marks the subscription id failing since at, or, with
// a zero at, clears the mark. A subscription that is gone is no error.
func (db *DB) SetWebhookFailing(ctx context.Context, id string, at time.Time) error {
	q := db.bun.NewUpdate().Model((*webhookRow)(nil)).Where("id = ?", id)
	if at.IsZero() {
		q = q.Set("failing_since = 0").Where("failing_since <> 0")
	} else {
		q = q.Set("failing_since = ?", at.UnixMicro()).Where("failing_since = 0")
	}
	if _, err := q.Exec(ctx); err != nil {
		return fmt.Errorf("storage: webhook %s failing: %w", id, err)
	}
	return nil
}

// FailingWebhooks counts the subscriptions marked failing, without
// reading (and decrypting) them.
func (db *DB) FailingWebhooks(ctx context.Context) (int, error) {
	n, err := db.bun.NewSelect().Model((*webhookRow)(nil)).Where("failing_since <> 0").Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("storage: failing webhooks: %w", err)
	}
	return int(n), nil
}
