package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api/webhook"
	"github.com/vitrine/vitrine/engine/schema"
	"github.com/vitrine/vitrine/storage"
)

// Webhook subscriptions (api/outbox/README.md "Webhooks"): /webhooks and its children,
// resources webhooks.*, webhook.*, webhookping.post, webhookdeliveries.get
// and webhookdelivery.*, in the built-in group all. Deliveries themselves
// are the deliveries worker's (package main); here are the subscriptions,
// their logs, a redelivery and a test ping.

// webhookStore keeps subscriptions and their deliveries.
type webhookStore interface {
	CreateWebhook(ctx context.Context, w *storage.Webhook) error
	UpdateWebhook(ctx context.Context, w *storage.Webhook) error
	DeleteWebhook(ctx context.Context, id string) error
	Webhook(ctx context.Context, id string) (storage.Webhook, error)
	Webhooks(ctx context.Context) ([]storage.Webhook, error)
	Deliveries(ctx context.Context, sink string, q storage.DeliveryQuery) ([]storage.Delivery, int, error)
	Delivery(ctx context.Context, sink string, id int64) (storage.Delivery, error)
	Redeliver(ctx context.Context, sink string, id int64) error
}

var _ webhookStore = (*storage.DB)(nil)

// errWebhooksOff answers every /webhooks route while webhooks are off.
var errWebhooksOff = errorf(http.StatusNotFound, "Webhooks are turned off on this server (webhooks.enabled)")

// webhookStore returns the store, or errWebhooksOff.
func (s *Server) webhookStore() (webhookStore, error) {
	if s.webhooks == nil {
		return nil, errWebhooksOff
	}
	return s.webhooks, nil
}

// pathWebhook returns the store and the subscription the path names,
// refusing one whose users the key's rules for the call's resource do
// not all grant (a "*" subscription needs a rule on "*").
func (s *Server) pathWebhook(c *call) (webhookStore, storage.Webhook, error) {
	st, err := s.webhookStore()
	if err != nil {
		return nil, storage.Webhook{}, err
	}
	w, err := st.Webhook(c.ctx(), c.params["webhook"])
	if err != nil {
		return nil, storage.Webhook{}, err
	}
	if err := s.ownedBy(c, "the webhook is for", w.Users); err != nil {
		return nil, storage.Webhook{}, err
	}
	return st, w, nil
}

// webhookBody is the JSON of POST and PUT: every field optional but url on
// POST; on PUT an absent field keeps its value.
type webhookBody struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Users       *[]string `json:"users"`
	Description *string   `json:"description"`
	Active      *bool     `json:"active"`
	Secret      *string   `json:"secret"`
}

// apply checks b and writes it over w.
func (s *Server) apply(b webhookBody, w *storage.Webhook) error {
	if b.URL != nil {
		if err := s.checkWebhookURL(*b.URL); err != nil {
			return err
		}
		w.URL = *b.URL
	}
	if b.Events != nil {
		if err := checkEventPatterns(*b.Events); err != nil {
			return err
		}
		w.Events = *b.Events
	}
	if b.Users != nil {
		if err := checkWebhookUsers(*b.Users); err != nil {
			return err
		}
		w.Users = *b.Users
	}
	if b.Description != nil {
		if len(*b.Description) > 1024 {
			return errorf(http.StatusBadRequest, "A webhook's description is at most 1024 bytes")
		}
		w.Description = *b.Description
	}
	if b.Active != nil {
		w.Active = *b.Active
	}
	return nil
}

// checkWebhookURL refuses what cannot be a receiver: not absolute http or
// https, credentials in it, or an address literal the outbound guard
// refuses (a host name is checked at each connection, on the addresses
// it resolves to then).
func (s *Server) checkWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > 2048 {
		return errorf(http.StatusBadRequest, "A webhook's url must be an absolute http or https URL of at most 2048 bytes")
	}
	if u.User != nil {
		return errorf(http.StatusBadRequest, "A webhook's url must not carry credentials: the secret authenticates deliveries")
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if err := s.guard.Check(a); err != nil {
			return errorf(http.StatusBadRequest, "A webhook's url is refused: %s (outbound.allow opens it)", clientMessage(err))
		}
	}
	return nil
}

// clientMessage is err's PublicMessage when it has one (the outbound
// guard's refusals), else its text.
func clientMessage(err error) string {
	var pe interface{ PublicMessage() string }
	if errors.As(err, &pe) {
		return pe.PublicMessage()
	}
	return err.Error()
}

// EventTypes returns, sorted, every event type a webhook's events
// pattern may match (the admin UI lists them beside its form).
func EventTypes() []string { return storage.EventTypes() }

// checkEventPatterns refuses an empty list and any pattern that matches
// no event type, so that a typo is refused rather than silent.
func checkEventPatterns(patterns []string) error {
	if len(patterns) == 0 || len(patterns) > 64 {
		return errorf(http.StatusBadRequest, "A webhook's events are 1 to 64 event type patterns")
	}
	types := EventTypes()
	for _, p := range patterns {
		matched := false
		for _, t := range types {
			matched = matched || schema.MatchEvent(p, t)
		}
		if !matched {
			return errorf(http.StatusBadRequest, "Event pattern '%s' matches no event type; patterns are a type "+
				"(io.vitrine.image.added), io.vitrine.<resource>.* or *", p)
		}
	}
	return nil
}

// checkWebhookUsers refuses an empty list and names that are neither "*"
// nor a valid user name.
func checkWebhookUsers(users []string) error {
	if len(users) == 0 || len(users) > 64 {
		return errorf(http.StatusBadRequest, "A webhook's users are 1 to 64 user names, or [\"*\"] for every user")
	}
	for _, u := range users {
		if u != "*" && !namePattern.MatchString(u) {
			return invalidUserName(u)
		}
	}
	return nil
}

// webhookJSON is a subscription as the API shows it: never its secret.
func webhookJSON(w storage.Webhook) Webhook {
	out := Webhook{ID: w.ID, URL: w.URL, Events: w.Events, Users: w.Users, Description: w.Description,
		Active: w.Active, Failing: !w.FailingSince.IsZero(), Created: w.Created.Format(time.RFC3339Nano),
		Updated: w.Updated.Format(time.RFC3339Nano)}
	if out.Failing {
		since := w.FailingSince.Format(time.RFC3339Nano)
		out.FailingSince = &since
	}
	return out
}

// listWebhooks serves GET /webhooks.
func (s *Server) listWebhooks(c *call) error {
	st, err := s.webhookStore()
	if err != nil {
		return err
	}
	hooks, err := st.Webhooks(c.ctx())
	if err != nil {
		return err
	}
	g, err := s.grantedUsers(c)
	if err != nil {
		return err
	}
	list := []Webhook{}
	for _, h := range hooks {
		if g.has(h.Users...) {
			list = append(list, webhookJSON(h))
		}
	}
	return c.writeJSON(WebhookList{Webhooks: list}, out{cache: cacheNone})
}

// postWebhook serves POST /webhooks: 201 with the subscription and its
// secret, the only answer that shows it.
func (s *Server) postWebhook(c *call) error {
	st, err := s.webhookStore()
	if err != nil {
		return err
	}
	var b webhookBody
	if err := c.readJSON(64<<10, &b); err != nil {
		return err
	}
	if b.URL == nil {
		return errorf(http.StatusBadRequest, "A webhook needs a url")
	}
	w := storage.Webhook{ID: newWebhookID(), Events: []string{"*"}, Users: []string{"*"}, Active: true,
		Secret: webhook.NewSecret()}
	if b.Secret != nil {
		if webhook.CheckSecret(*b.Secret) != nil {
			return errorf(http.StatusBadRequest, "A webhook's secret is whsec_ followed by base64 of 24 to 64 bytes")
		}
		w.Secret = *b.Secret
	}
	if err := s.apply(b, &w); err != nil {
		return err
	}
	if err := s.ownedBy(c, "the webhook would be for", w.Users); err != nil {
		return err
	}
	if err := st.CreateWebhook(c.ctx(), &w); err != nil {
		return err
	}
	c.w.Header().Set("Location", "/webhooks/"+w.ID)
	return c.writeJSON(WebhookCreated{Webhook: webhookJSON(w), Secret: w.Secret}, out{status: http.StatusCreated, cache: cacheNone})
}

// newWebhookID returns a random id of 16 hex digits.
func newWebhookID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// getWebhook serves GET /webhooks/{webhook}.
func (s *Server) getWebhook(c *call) error {
	_, w, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	return c.writeJSON(webhookJSON(w), out{cache: cacheNone})
}

// putWebhook serves PUT /webhooks/{webhook}: the fields given replace
// theirs (the secret cannot be changed: make a new subscription).
func (s *Server) putWebhook(c *call) error {
	st, w, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	var b webhookBody
	if err := c.readJSON(64<<10, &b); err != nil {
		return err
	}
	if b.Secret != nil {
		return errorf(http.StatusBadRequest, "A webhook's secret cannot be changed; create a new webhook and delete this one")
	}
	if err := s.apply(b, &w); err != nil {
		return err
	}
	if err := s.ownedBy(c, "the webhook would be for", w.Users); err != nil {
		return err
	}
	if err := st.UpdateWebhook(c.ctx(), &w); err != nil {
		return err
	}
	return c.writeJSON(webhookJSON(w), out{cache: cacheNone})
}

// deleteWebhook serves DELETE /webhooks/{webhook}: the subscription and
// its log go; nothing more is delivered to it.
func (s *Server) deleteWebhook(c *call) error {
	st, w, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	id := w.ID
	if err := st.DeleteWebhook(c.ctx(), id); err != nil {
		return err
	}
	return c.writeJSON(map[string]string{"id": id}, out{cache: cacheNone})
}

// pingWebhook serves POST /webhooks/{webhook}/ping: an event of type
// io.vitrine.webhook.ping sent at once, signed as any delivery, whose
// outcome is the answer (200 whether or not the receiver took it).
func (s *Server) pingWebhook(c *call) error {
	_, w, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(map[string]string{"webhook": w.ID}) // never fails
	ev := storage.Event{ID: storage.NewEventID(), Type: "io.vitrine.webhook.ping", Source: storage.EventSource,
		Subject: "webhooks/" + w.ID, Time: s.now().UTC(), Data: data}
	body, err := ev.MarshalJSON()
	if err != nil {
		return err
	}
	r := webhook.Send(c.ctx(), s.guard.Client(), w.URL, w.Secret, webhook.Message{ID: ev.ID, Body: body})
	res := PingResult{ID: ev.ID, Delivered: r.Err == nil, Status: r.Status, Latency: r.Latency.Seconds(), Response: r.Response}
	if r.Err != nil {
		msg := clientMessage(r.Err)
		res.Error = &msg
	}
	return c.writeJSON(res, out{cache: cacheNone})
}

// listDeliveries serves GET /webhooks/{webhook}/deliveries: the
// subscription's log, newest first, filtered by state and paged.
func (s *Server) listDeliveries(c *call) error {
	st, w, err := s.pathWebhook(c)
	if err != nil {
		return err
	}
	id := w.ID
	var q storage.DeliveryQuery
	if q.Page, err = intParam(c.query, "page", 1, 1, 1<<30); err != nil {
		return err
	}
	if q.Limit, err = intParam(c.query, "limit", 20, 1, 100); err != nil {
		return err
	}
	if state := c.query.Get("state"); state != "" {
		if q.State, q.Filter = deliveryState(state); !q.Filter {
			return errorf(http.StatusBadRequest, "Unknown state '%s': pending, delivered or failed", state)
		}
	}
	list, n, err := st.Deliveries(c.ctx(), storage.WebhookSink(id), q)
	if err != nil {
		return err
	}
	out := DeliveryList{Search: Search{Hits: n, Page: q.Page, Limit: q.Limit, Count: len(list)},
		Deliveries: make([]Delivery, len(list))}
	for i, d := range list {
		out.Deliveries[i] = deliveryJSON(d)
	}
	return c.writeJSON(out, outNoCache)
}

// outNoCache answers JSON that no cache keeps.
var outNoCache = out{cache: cacheNone}

func deliveryState(name string) (storage.DeliveryState, bool) {
	for _, st := range []storage.DeliveryState{storage.DeliveryPending, storage.DeliveryDone, storage.DeliveryFailed} {
		if st.String() == name {
			return st, true
		}
	}
	return 0, false
}

// deliveryJSON is a delivery as the API shows it.
func deliveryJSON(d storage.Delivery) Delivery {
	out := Delivery{ID: d.ID, EventID: d.Event.ID, Type: d.Event.Type, Subject: d.Event.Subject,
		State: d.State.String(), Attempts: d.Attempts, Created: d.Created.Format(time.RFC3339Nano),
		LastStatus: d.LastStatus, Log: make([]DeliveryAttempt, len(d.Log))}
	if d.LastError != "" {
		out.LastError = &d.LastError
	}
	if d.State == storage.DeliveryPending {
		next := d.Due.Format(time.RFC3339Nano)
		out.NextAttempt = &next
	} else {
		fin := d.Finished.Format(time.RFC3339Nano)
		out.Finished = &fin
	}
	for i, a := range d.Log {
		out.Log[i] = DeliveryAttempt{Time: a.At.Format(time.RFC3339Nano), Status: a.Status,
			Latency: a.Latency.Seconds(), Response: a.Response}
		if a.Error != "" {
			out.Log[i].Error = &d.Log[i].Error
		}
	}
	return out
}

// delivery reads the delivery the path names, of a subscription the key
// may reach (pathWebhook).
func (s *Server) delivery(c *call) (webhookStore, string, int64, error) {
	st, _, err := s.pathWebhook(c)
	if err != nil {
		return nil, "", 0, err
	}
	id, err := strconv.ParseInt(c.params["delivery"], 10, 64)
	if err != nil {
		return nil, "", 0, errorf(http.StatusNotFound, "Not Found")
	}
	return st, storage.WebhookSink(c.params["webhook"]), id, nil
}

// getDelivery serves GET /webhooks/{webhook}/deliveries/{delivery}.
func (s *Server) getDelivery(c *call) error {
	st, sink, id, err := s.delivery(c)
	if err != nil {
		return err
	}
	d, err := st.Delivery(c.ctx(), sink, id)
	if err != nil {
		return err
	}
	return c.writeJSON(deliveryJSON(d), outNoCache)
}

// redeliver serves POST /webhooks/{webhook}/deliveries/{delivery}/redeliver:
// a finished delivery is sent again (same event id), with a new retry
// window; 202, and 409 while it is still pending.
func (s *Server) redeliver(c *call) error {
	st, sink, id, err := s.delivery(c)
	if err != nil {
		return err
	}
	if err := st.Redeliver(c.ctx(), sink, id); err != nil {
		return err
	}
	d, err := st.Delivery(c.ctx(), sink, id)
	if err != nil {
		return err
	}
	return c.writeJSON(deliveryJSON(d), out{status: http.StatusAccepted, cache: cacheNone})
}
