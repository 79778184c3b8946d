package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

// Erasing a user: the user's page offers "Erase user" to keys holding
// user.delete; the confirmation asks for the user's name to be typed,
// and the erasure's page follows it (reloading itself while it runs) and
// offers its receipt, all through DELETE /users/<user> and GET
// /users/<user>/erasure[/receipt].

// eraseView is the confirmation of a user's erasure.
type eraseView struct {
	Page   pageView
	User   string
	Images int // -1 when the key may not list them
	Action string
	Cancel string
	// Typed is what was typed; Error says why it was refused.
	Typed, Error string
}

// erasureView is an erasure's progress, then its outcome.
type erasureView struct {
	Page    pageView
	User    string
	E       api.Erasure
	Counts  []countRow
	Receipt string // the UI's download of the receipt, once done
	Erase   string // the confirmation, for a user with something left
	// Requested, Started and Finished are the times as shown.
	Requested, Started, Finished string
}

// countRow is one kind of what an erasure removed.
type countRow struct {
	Kind  string
	Value string
}

// userPath is the UI's path of user's page, under the prefix.
func (q *request) userPath(user string) string { return q.path("/users/" + url.PathEscape(user)) }

// confirmErase asks before erasing a user.
func (u *UI) confirmErase(q *request) error {
	user := q.r.PathValue("user")
	if !validName(user) {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("user", user, "")}
	}
	return q.render(http.StatusOK, confirmErasePage(q.eraseView(user)))
}

func (q *request) eraseView(user string) eraseView {
	return eraseView{Page: q.page("Erase user "+user+"?", "images"), User: user,
		Images: q.imageCount(q.r.Context(), user), Action: q.userPath(user) + "/erase", Cancel: q.userPath(user)}
}

// erase asks the API to erase the user once its name was typed, and
// leads to the erasure's page.
func (u *UI) erase(q *request) error {
	user := q.r.PathValue("user")
	if !validName(user) {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("user", user, "")}
	}
	typed := strings.TrimSpace(q.r.PostFormValue("confirm"))
	if typed != user {
		v := q.eraseView(user)
		v.Typed, v.Error = typed, "Type the user name, "+user+", to confirm."
		return q.render(http.StatusBadRequest, confirmErasePage(v))
	}
	_, err := q.api.send(q.r.Context(), http.MethodDelete, "/users/"+url.PathEscape(user), nil, "")
	var ae *apiError
	if errors.As(err, &ae) && !ae.denied() {
		v := q.eraseView(user)
		v.Typed, v.Error = typed, ae.Message
		return q.render(ae.formStatus(), confirmErasePage(v))
	}
	if err != nil {
		return err
	}
	return q.redirect("/users/" + url.PathEscape(user) + "/erasure")
}

// erasureRefresh is how often the erasure's page reloads while it runs.
const erasureRefresh = 2

// erasure shows the user's latest erasure: while it runs, what went so
// far (the page reloads itself, with a Refresh header: no script); once
// done, its outcome and the receipt.
func (u *UI) erasure(q *request) error {
	user := q.r.PathValue("user")
	if !validName(user) {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("user", user, "")}
	}
	var e api.Erasure
	if err := q.api.getJSON(q.r.Context(), "/users/"+url.PathEscape(user)+"/erasure", nil, &e); err != nil {
		return notFoundAs(err, "User "+user+" was never erased.")
	}
	v := erasureView{Page: q.page("Erasure of "+user, "images"), User: user, E: e,
		Requested: shownTime(&e.Requested), Started: shownTime(e.Started), Finished: shownTime(e.Finished)}
	kinds := make([]string, 0, len(e.Counts))
	for k := range e.Counts {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		v.Counts = append(v.Counts, countRow{Kind: k, Value: strconv.FormatInt(e.Counts[k], 10)})
	}
	if e.State == "done" {
		v.Receipt = q.userPath(user) + "/erasure/receipt"
		if q.may("user.delete", user) && q.imageCount(q.r.Context(), user) > 0 {
			v.Erase = q.userPath(user) + "/erase"
		}
	} else {
		q.w.Header().Set("Refresh", strconv.Itoa(erasureRefresh))
	}
	return q.render(http.StatusOK, erasurePage(v))
}

// receipt downloads the receipt of the user's latest finished erasure,
// as the API serves it.
func (u *UI) receipt(q *request) error {
	user := q.r.PathValue("user")
	if !validName(user) {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("user", user, "")}
	}
	r, err := q.api.do(q.r.Context(), http.MethodGet, "/users/"+url.PathEscape(user)+"/erasure/receipt", nil, nil, "")
	if err != nil {
		return err
	}
	if e := r.err(); e != nil {
		return e
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Disposition", r.Header.Get("Content-Disposition"))
	h.Set("Cache-Control", "no-store")
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write(r.Body)
	return nil
}

// shownTime is an RFC 3339 time of the API as the pages show times; "—"
// for none.
func shownTime(s *string) string {
	if s == nil {
		return "—"
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return *s
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// erasureState says where an erasure is, in words.
func erasureState(e api.Erasure) string {
	switch {
	case e.State == "done":
		return "Done: nothing of " + e.User + " is left."
	case e.State == "pending":
		return "Waiting for an instance to take it."
	case e.Phase == "blobs":
		return "Deleting the last blobs from the store."
	}
	return "Erasing images, a batch at a time."
}
