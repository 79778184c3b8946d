package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vitrine/vitrine/api"
)

// webhookView is one subscription: its settings and their form, a test
// ping, deletion, and its delivery log.
type webhookView struct {
	Page pageView
	Hook webhookRow
	Form webhookForm
	// Created is the secret to show once, right after creation.
	Created *createdWebhook
	// Ping is the result of the test ping just sent.
	Ping                                      *pingView
	CanEdit, CanDelete, CanPing, CanRedeliver bool
	Base                                      string
	Log                                       deliveryLog
	// Families and Types are the event patterns for the form's hint.
	Families, Types []string
}

// deliveryLog is one page of a subscription's deliveries, filtered by
// state.
type deliveryLog struct {
	// Denied says why the log is not shown; Error is the API's refusal
	// of the filter.
	Denied, Error string
	Deliveries    []deliveryRow
	// State is the filter ("" for every state), States the choices.
	State               string
	States              []string
	Hits, PageNo, Pages int
	Action              string
	PrevHref, NextHref  string
}

// deliveryRow is one delivery as the log shows it.
type deliveryRow struct {
	ID, Type, Subject, State string
	Attempts                 int
	Created                  string
	// When is the next attempt while pending, else when it finished;
	// WhenLabel says which.
	When, WhenLabel       string
	LastStatus, LastError string
	Attempted             []attemptRow
	// Redeliver is where its redeliver form posts, once it has finished.
	Redeliver string
}

// attemptRow is one attempt of a delivery.
type attemptRow struct {
	Time, Status, Latency, Response, Error string
}

// webhookFlash is what a post shows once on a subscription's page: its
// secret after creation, or the result of a test ping.
type webhookFlash struct {
	Created *createdWebhook `json:",omitempty"`
	Ping    *pingView       `json:",omitempty"`
}

// pingView is what the receiver made of a test ping.
type pingView struct {
	// Webhook is the subscription's id, ID the test event's.
	Webhook   string
	ID        string
	Delivered bool
	Status    string
	Latency   string
	Response  string
	Error     string
}

// deliveryStates are the log's filter choices (the API's states).
var deliveryStates = []string{"pending", "delivered", "failed"}

// logPageSize is how many deliveries a page of the log shows.
const logPageSize = 20

// flashResponseBytes is how much of a ping's answer travels in the flash
// cookie, which must stay under the 4 KB browsers keep.
const flashResponseBytes = 256

func (u *UI) webhook(q *request) error {
	id := q.r.PathValue("id")
	v := webhookView{Page: q.page("Webhook "+id, "webhooks")}
	switch q.r.URL.Query().Get("done") {
	case "created":
		v.Page.Notice = "Webhook created."
	case "saved":
		v.Page.Notice = "Webhook saved."
	case "redelivered":
		v.Page.Notice = "The delivery is pending again and goes out shortly."
	}
	var f webhookFlash
	if q.takeFlash(&f) {
		if f.Created != nil && f.Created.ID == id {
			v.Created = f.Created
		}
		if f.Ping != nil && f.Ping.Webhook == id {
			v.Ping = f.Ping
		}
	}
	return q.renderWebhook(http.StatusOK, v)
}

// renderWebhook fills the page from the API and writes it.
func (q *request) renderWebhook(status int, v webhookView) error {
	ctx := q.r.Context()
	id := q.r.PathValue("id")
	var w api.Webhook
	if err := q.api.getJSON(ctx, "/webhooks/"+url.PathEscape(id), nil, &w); err != nil {
		if offError(err) {
			return err
		}
		return notFoundAs(err, "There is no webhook "+id+".")
	}
	v.Hook = q.webhookRowOf(w)
	v.Base = v.Hook.Href
	v.Types = api.EventTypes()
	v.Families = eventFamilies(v.Types)
	if v.Form.URL == "" && v.Form.Error == "" {
		v.Form = webhookForm{URL: w.URL, Events: strings.Join(w.Events, "\n"), Users: strings.Join(w.Users, ", "),
			Description: w.Description, Active: w.Active}
	}
	v.CanEdit, v.CanDelete = q.mayAny("webhook.put"), q.mayAny("webhook.delete")
	v.CanPing, v.CanRedeliver = q.mayAny("webhookping.post"), q.mayAny("webhookdelivery.post")
	if err := q.loadLog(&v); err != nil {
		return err
	}
	if v.Log.Error != "" && status == http.StatusOK {
		status = http.StatusBadRequest
	}
	return q.render(status, webhookPage(v))
}

// loadLog reads one page of the delivery log, as the query asks.
func (q *request) loadLog(v *webhookView) error {
	in := q.r.URL.Query()
	l := &v.Log
	l.States, l.Action = deliveryStates, v.Base
	if s := in.Get("state"); s != "" {
		l.State = s
	}
	l.PageNo, _ = strconv.Atoi(in.Get("page"))
	l.PageNo = max(l.PageNo, 1)
	args := url.Values{"page": {strconv.Itoa(l.PageNo)}, "limit": {strconv.Itoa(logPageSize)}}
	if l.State != "" {
		args.Set("state", l.State)
	}
	var got api.DeliveryList
	if err := q.api.getJSON(q.r.Context(), "/webhooks/"+url.PathEscape(v.Hook.ID)+"/deliveries", args, &got); err != nil {
		if msg, denied := denial(err); denied {
			l.Denied = msg
			return nil
		}
		if ae, ok := err.(*apiError); ok && ae.Status == http.StatusBadRequest {
			l.Error = ae.Message
			return nil
		}
		return err
	}
	l.Hits = got.Search.Hits
	l.Pages = (l.Hits + logPageSize - 1) / logPageSize
	for _, d := range got.Deliveries {
		l.Deliveries = append(l.Deliveries, q.deliveryRowOf(v, d))
	}
	link := func(n int) string {
		a := url.Values{"page": {strconv.Itoa(n)}}
		if l.State != "" {
			a.Set("state", l.State)
		}
		return v.Base + "?" + a.Encode() + "#log-h"
	}
	if l.PageNo > 1 {
		l.PrevHref = link(min(l.PageNo-1, max(l.Pages, 1)))
	}
	if l.PageNo < l.Pages {
		l.NextHref = link(l.PageNo + 1)
	}
	return nil
}

// deliveryRowOf is d as the log shows it.
func (q *request) deliveryRowOf(v *webhookView, d api.Delivery) deliveryRow {
	r := deliveryRow{ID: strconv.FormatInt(d.ID, 10), Type: d.Type, Subject: d.Subject, State: d.State,
		Attempts: d.Attempts, Created: utcTime(d.Created), LastStatus: statusText(d.LastStatus)}
	if d.LastError != nil {
		r.LastError = *d.LastError
	}
	switch {
	case d.NextAttempt != nil:
		r.When, r.WhenLabel = utcTime(*d.NextAttempt), "Next attempt"
	case d.Finished != nil:
		r.When, r.WhenLabel = utcTime(*d.Finished), "Finished"
	}
	for _, a := range d.Log {
		row := attemptRow{Time: utcTime(a.Time), Status: statusText(a.Status), Latency: latencyText(a.Latency), Response: a.Response}
		if a.Error != nil {
			row.Error = *a.Error
		}
		r.Attempted = append(r.Attempted, row)
	}
	if d.State != "pending" && v.CanRedeliver {
		r.Redeliver = v.Base + "/deliveries/" + r.ID + "/redeliver"
	}
	return r
}

// statusText is an HTTP status, or "—" when the receiver gave none.
func statusText(s int) string {
	if s == 0 {
		return "—"
	}
	return strconv.Itoa(s)
}

// latencyText writes seconds as milliseconds, "—" for none.
func latencyText(s float64) string {
	if s <= 0 {
		return "—"
	}
	if s < 0.01 {
		return strconv.FormatFloat(s*1000, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(s*1000, 'f', 0, 64) + " ms"
}

// saveWebhook replaces the subscription's settings with the form's (PUT).
func (u *UI) saveWebhook(q *request) error {
	id := q.r.PathValue("id")
	f := webhookFormOf(q.r)
	path := "/webhooks/" + url.PathEscape(id)
	if _, err := q.api.send(q.r.Context(), http.MethodPut, path, f.body(true), ""); err != nil {
		status, err := f.refused(err)
		if err != nil {
			return err
		}
		return q.renderWebhook(status, webhookView{Page: q.page("Webhook "+id, "webhooks"), Form: f})
	}
	return q.redirect(path + "?done=saved")
}

// pingWebhook sends a test event now; what the receiver made of it comes
// back to the page.
func (u *UI) pingWebhook(q *request) error {
	id := q.r.PathValue("id")
	path := "/webhooks/" + url.PathEscape(id)
	r, err := q.api.send(q.r.Context(), http.MethodPost, path+"/ping", nil, "")
	if err != nil {
		return err
	}
	var res api.PingResult
	if err := json.Unmarshal(r.Body, &res); err != nil {
		return err
	}
	p := pingView{Webhook: id, ID: res.ID, Delivered: res.Delivered, Status: statusText(res.Status),
		Latency: latencyText(res.Latency), Response: clipText(res.Response, flashResponseBytes)}
	if res.Error != nil {
		p.Error = clipText(*res.Error, 512)
	}
	if err := q.setFlash(webhookFlash{Ping: &p}); err != nil {
		return err
	}
	return q.redirect(path + "#ping-h")
}

// clipText is s cut to at most n bytes on a character boundary, with "…"
// when cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// confirmDeleteWebhook asks before a subscription is deleted.
func (u *UI) confirmDeleteWebhook(q *request) error {
	id := q.r.PathValue("id")
	var w api.Webhook
	if err := q.api.getJSON(q.r.Context(), "/webhooks/"+url.PathEscape(id), nil, &w); err != nil {
		return notFoundAs(err, "There is no webhook "+id+".")
	}
	base := "/webhooks/" + url.PathEscape(id)
	v := actionConfirmView{Page: q.page("Delete webhook "+id+"?", "webhooks"),
		Message: "Nothing more is sent to " + w.URL + ": the subscription, its pending deliveries and its delivery log are deleted.",
		Action:  q.path(base + "/delete"), Button: "Delete webhook", Cancel: q.path(base), Danger: true}
	return q.render(http.StatusOK, actionConfirmPage(v))
}

func (u *UI) deleteWebhook(q *request) error {
	id := q.r.PathValue("id")
	if _, err := q.api.send(q.r.Context(), http.MethodDelete, "/webhooks/"+url.PathEscape(id), nil, ""); err != nil {
		return err
	}
	return q.redirect("/webhooks?deleted=" + url.QueryEscape(id))
}

// redeliver sends a finished delivery again and comes back to the log as
// it was shown (its state filter and page).
func (u *UI) redeliver(q *request) error {
	id, d := q.r.PathValue("id"), q.r.PathValue("delivery")
	path := "/webhooks/" + url.PathEscape(id)
	if _, err := q.api.send(q.r.Context(), http.MethodPost, path+"/deliveries/"+url.PathEscape(d)+"/redeliver", nil, ""); err != nil {
		return err
	}
	back := url.Values{"done": {"redelivered"}}
	if s := q.r.PostFormValue("state"); s != "" {
		back.Set("state", s)
	}
	if p := q.r.PostFormValue("page"); p != "" {
		back.Set("page", p)
	}
	return q.redirect(path + "?" + back.Encode() + "#log-h")
}
