package web

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/a-h/templ"

	"github.com/vitrine/vitrine/api"
)

// request is one signed-in page request.
type request struct {
	ui   *UI
	w    http.ResponseWriter
	r    *http.Request
	sess Session
	api  *apiClient
	// rules are the key's own rules, once read (ownRules).
	rules *[]api.Rule
}

// pageView is what the layout needs from every page.
type pageView struct {
	Title string
	// Active names the navigation entry to highlight.
	Active    string
	Prefix    string
	PublicKey string
	CSRF      string
	// Notice is a confirmation shown at the top ("Metadata saved.").
	Notice string
	// Denied lists what the signed-in key may not do on this page, in the
	// API's words.
	Denied []string
	// Nav is the navigation: the pages the key may use.
	Nav []navItem
}

func (q *request) page(title, active string) pageView {
	p := pageView{Title: title, Active: active, Prefix: q.ui.cfg.Prefix, PublicKey: q.sess.PublicKey, CSRF: q.sess.CSRF}
	for _, n := range navItems {
		if n.Needs == "" || q.mayAny(n.Needs) {
			p.Nav = append(p.Nav, n)
		}
	}
	return p
}

// path is p under the UI's prefix.
func (q *request) path(p string) string { return q.ui.cfg.Prefix + p }

// render writes a page with the given status.
func (q *request) render(status int, c templ.Component) error {
	return writePage(q.w, q.r, status, c)
}

// writePage renders c before it writes anything, so a page that fails to
// render leaves the response untouched for the caller's error page (a
// clean 500) instead of half a page under status.
func writePage(w http.ResponseWriter, r *http.Request, status int, c templ.Component) error {
	var b bytes.Buffer
	if err := c.Render(r.Context(), &b); err != nil {
		return fmt.Errorf("web: rendering %s: %w", r.URL.Path, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, err := b.WriteTo(w)
	return err
}

// redirect sends the browser to p (under the prefix) after a successful
// POST, so a reload does not post again.
func (q *request) redirect(p string) error {
	http.Redirect(q.w, q.r, q.path(p), http.StatusSeeOther)
	return nil
}

// denial returns the message of err when the API refused the key, and
// whether it did; other errors are returned for the caller to fail with.
func denial(err error) (string, bool) {
	var ae *apiError
	if errors.As(err, &ae) && ae.denied() {
		return ae.Message, true
	}
	return "", false
}

// immutableMessage is what the API answers (405) when keys, groups and
// rules cannot change; readOnlyMessage is what the UI says instead.
const (
	immutableMessage = "Access control adapter is immutable"
	readOnlyMessage  = "Keys and access rules are read-only on this service: accessControl.database is off in the " +
		"configuration (or the key is defined in the configuration file). Set accessControl.database: true and " +
		"restart, or use the vitrine keys command on the server."
)

// refusalMessage is the API's message for a refusal, in the UI's words
// where the API's own would not tell a person what to do.
func refusalMessage(ae *apiError) string {
	if ae.Status == http.StatusMethodNotAllowed && ae.Message == immutableMessage {
		return readOnlyMessage
	}
	return ae.Message
}

// errorFor is the error page of err: the API's own status and message
// when the API refused, 500 otherwise (logged).
func (u *UI) errorFor(r *http.Request, err error) errorView {
	var ae *apiError
	v := errorView{Prefix: u.cfg.Prefix, Status: http.StatusInternalServerError,
		Message: "Something went wrong on the server; the details are in its log."}
	if errors.As(err, &ae) {
		v.Status, v.Message = ae.Status, refusalMessage(ae)
		if ae.denied() {
			v.Status = http.StatusForbidden
			v.Message = "Your key may not do this: " + ae.Message
		}
	} else {
		u.cfg.Logger.Error("web: page failed", "path", r.URL.Path, "err", err)
	}
	return v
}

// fail answers a request without a session whose page could not be
// built, on a page of its own.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, err error) {
	v := u.errorFor(r, err)
	_ = writePage(w, r, v.Status, errorPage(v))
}

// fail answers a signed-in request whose page could not be built: the
// error in the usual frame, with the navigation, so it is no dead end.
func (q *request) fail(err error) {
	v := q.ui.errorFor(q.r, err)
	title := "That did not work"
	switch v.Status {
	case http.StatusNotFound:
		title = "Not found"
	case http.StatusForbidden:
		title = "Not allowed"
	}
	_ = q.render(v.Status, errorInLayout(q.page(title, ""), v))
}

// notFound is every path under the UI that is no page.
func (u *UI) notFound(q *request) error {
	return &apiError{Status: http.StatusNotFound, Message: "There is no page at " + q.r.URL.Path + "."}
}

// notFoundAs replaces the API's 404 for what a page looked up (whose
// message names the API's resource, or is a bare "Not Found" for a name
// the API's routes do not take) by message, which says what was not found.
func notFoundAs(err error, message string) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return &apiError{Status: http.StatusNotFound, Message: message}
	}
	return err
}

// validName reports whether s can name a user or key: 1 to 64 letters,
// digits, - and _, as the API's routes take.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// noSuch is the message for a user or key (kind) named name that does not
// exist, or whose name cannot be one.
func noSuch(kind, name, why string) string {
	if !validName(name) {
		return "“" + name + "” cannot be a " + kind + " name: names are 1 to 64 letters, digits, - and _."
	}
	return "There is no " + kind + " " + name + why + "."
}

// actionConfirmView asks before a change: Message says what it does,
// Action is where the form posts, Cancel where the other way leads.
type actionConfirmView struct {
	Page                            pageView
	Message, Action, Button, Cancel string
	Danger                          bool
}

// errorView is the page shown when a page cannot be built.
type errorView struct {
	Prefix  string
	Status  int
	Message string
}
