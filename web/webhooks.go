package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

// webhooksView lists the webhook subscriptions and creates new ones.
type webhooksView struct {
	Page  pageView
	Hooks []webhookRow
	Form  webhookForm
	// Off is set when the service has webhooks turned off
	// (webhooks.enabled: false): the API answers no /webhooks route.
	Off       bool
	CanCreate bool
	// Sinks are the events' sinks from GET /status (none while events
	// are off).
	Sinks []api.SinkStatus
	// Families are the event type patterns by resource
	// (io.vitrine.image.*), Types every event type, for the form's hint.
	Families, Types []string
}

// webhookRow is one subscription as the pages show it.
type webhookRow struct {
	api.Webhook
	Href          string
	Events, Users string
	// Created is a UTC time to read, CreatedShort to the minute (the
	// list), FailingSince to the minute with its zone (it goes into a
	// badge).
	Created, CreatedShort, FailingSince string
}

// webhookForm is the create or edit form of a subscription with the
// API's complaint; Field names the field it is about ("url", "events",
// "users", "description"), "" when it is about none of them.
type webhookForm struct {
	URL, Events, Users, Description string
	Active                          bool
	Error, Field                    string
}

// createdWebhook is shown once, right after a subscription is created (a
// flash: the secret never goes into a URL).
type createdWebhook struct {
	ID, URL, Secret string
}

// webhooksOff is the API's answer while webhooks are off; pages say it in
// their own frame rather than as a missing page.
const webhooksOff = "Webhooks are turned off on this server"

// offError reports whether err is the API's answer while webhooks are off.
func offError(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound && strings.HasPrefix(ae.Message, webhooksOff)
}

// webhookRowOf is w as the pages show it.
func (q *request) webhookRowOf(w api.Webhook) webhookRow {
	r := webhookRow{Webhook: w, Href: q.path("/webhooks/" + url.PathEscape(w.ID)),
		Events: strings.Join(w.Events, ", "), Users: strings.Join(w.Users, ", "), Created: utcTime(w.Created),
		CreatedShort: shortTime(w.Created)}
	if w.FailingSince != nil {
		r.FailingSince = shortTime(*w.FailingSince) + " UTC"
	}
	return r
}

// utcTime writes an RFC 3339 time as "2006-01-02 15:04:05" in UTC, or "—".
func utcTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// eventFamilies are the patterns a form's hint offers: one per resource
// that has events (io.vitrine.image.*), from the types the API knows.
func eventFamilies(types []string) []string {
	var out []string
	for _, t := range types {
		i := strings.LastIndexByte(t, '.')
		if i < 0 {
			continue
		}
		if f := t[:i] + ".*"; len(out) == 0 || out[len(out)-1] != f {
			out = append(out, f)
		}
	}
	return out
}

func (u *UI) webhooks(q *request) error {
	v := webhooksView{Page: q.page("Webhooks", "webhooks"), Form: webhookForm{Users: "*", Active: true}}
	if d := q.r.URL.Query().Get("deleted"); d != "" {
		v.Page.Notice = "Webhook " + d + " and its delivery log were deleted."
	}
	return q.renderWebhooks(http.StatusOK, v)
}

// renderWebhooks fills the list from GET /webhooks and writes the page.
func (q *request) renderWebhooks(status int, v webhooksView) error {
	v.Types = api.EventTypes()
	v.Families = eventFamilies(v.Types)
	v.CanCreate = q.mayAny("webhooks.post")
	var st api.Status
	// The sinks are an addition: the page works without them.
	if err := q.api.getJSON(q.r.Context(), "/status", nil, &st); err == nil {
		v.Sinks = st.Sinks
	}
	var got api.WebhookList
	if err := q.api.getJSON(q.r.Context(), "/webhooks", nil, &got); err != nil {
		if offError(err) {
			v.Off = true
			return q.render(status, webhooksPage(v))
		}
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.Page.Denied = append(v.Page.Denied, "listing webhooks ("+msg+")")
		if status == http.StatusOK {
			status = http.StatusForbidden
		}
	}
	for _, w := range got.Webhooks {
		v.Hooks = append(v.Hooks, q.webhookRowOf(w))
	}
	return q.render(status, webhooksPage(v))
}

// webhookFormOf reads the form: events and users are lists separated by
// commas, spaces or new lines; no users is every user.
func webhookFormOf(r *http.Request) webhookForm {
	return webhookForm{URL: strings.TrimSpace(r.PostFormValue("url")), Events: strings.TrimSpace(r.PostFormValue("events")),
		Users: strings.TrimSpace(r.PostFormValue("users")), Description: strings.TrimSpace(r.PostFormValue("description")),
		Active: r.PostFormValue("active") == "on"}
}

// body is the form as the JSON of POST and PUT /webhooks.
func (f webhookForm) body(active bool) []byte {
	users := splitFields(f.Users)
	if len(users) == 0 {
		users = []string{"*"}
	}
	b := map[string]any{"url": f.URL, "events": splitFields(f.Events), "users": users, "description": f.Description}
	if active {
		b["active"] = f.Active
	}
	out, _ := json.Marshal(b) // never fails
	return out
}

// refused shows the API's refusal err on the form, next to the field it
// is about; other errors are returned.
func (f *webhookForm) refused(err error) (int, error) {
	msg, status, err := refusal(err)
	if err != nil {
		return 0, err
	}
	f.Error, f.Field = msg, refusedField(msg)
	return status, nil
}

// refusedField names the form field a refusal of the API is about, from
// its message (api/webhooks.go words them).
func refusedField(msg string) string {
	switch {
	case strings.HasPrefix(msg, "A webhook's url"), strings.HasPrefix(msg, "A webhook needs a url"):
		return "url"
	case strings.HasPrefix(msg, "A webhook's events"), strings.HasPrefix(msg, "Event pattern"):
		return "events"
	case strings.HasPrefix(msg, "A webhook's users"), strings.HasPrefix(msg, "Invalid user name"):
		return "users"
	case strings.HasPrefix(msg, "A webhook's description"):
		return "description"
	}
	return ""
}

// createWebhook creates a subscription with POST /webhooks; its secret is
// shown once, on its page.
func (u *UI) createWebhook(q *request) error {
	f := webhookFormOf(q.r)
	r, err := q.api.send(q.r.Context(), http.MethodPost, "/webhooks", f.body(false), "")
	if err != nil {
		status, err := f.refused(err)
		if err != nil {
			return err
		}
		return q.renderWebhooks(status, webhooksView{Page: q.page("Webhooks", "webhooks"), Form: f})
	}
	var created api.WebhookCreated
	if err := json.Unmarshal(r.Body, &created); err != nil {
		return err
	}
	if err := q.setFlash(webhookFlash{Created: &createdWebhook{ID: created.ID, URL: created.URL, Secret: created.Secret}}); err != nil {
		return err
	}
	return q.redirect("/webhooks/" + url.PathEscape(created.ID) + "?done=created")
}
