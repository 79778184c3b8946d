package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sessionLister is what the sessions page needs of the session store
// beyond SessionStore; found by type assertion, so a store without it
// shows the page without the list. Plain values, so that the database
// handle satisfies it as it is.
type sessionLister interface {
	SessionsOf(ctx context.Context, publicKey string, each func(idHash, addr, userAgent string, created, seen time.Time)) error
	DeleteSessionsOf(ctx context.Context, publicKey string) (int64, error)
}

// sessionsView lists the signed-in key's sessions.
type sessionsView struct {
	Page     pageView
	Sessions []sessionRow
	// Listed is false when the store cannot list sessions.
	Listed bool
}

type sessionRow struct {
	// Browser names the user agent briefly ("Chrome on Linux").
	ID, Created, Seen, Addr, UserAgent, Browser string
	Current                                     bool
	Action                                      string
}

// sessionsPage shows the key's active sessions: where and when each
// signed in and was last seen, with a sign-out for each and for all.
func (u *UI) sessionsPage(q *request) error {
	v := sessionsView{Page: q.page("Sessions", "sessions")}
	switch q.r.URL.Query().Get("done") {
	case "one":
		v.Page.Notice = "The session was signed out."
	}
	if l, ok := u.sessions.(sessionLister); ok {
		v.Listed = true
		now := u.cfg.Now()
		err := l.SessionsOf(q.r.Context(), q.sess.PublicKey, func(id, addr, ua string, created, seen time.Time) {
			if now.Sub(created) > u.cfg.MaxAge || now.Sub(seen) > u.cfg.IdleTimeout {
				return // expired, removed at the next sign-in
			}
			v.Sessions = append(v.Sessions, sessionRow{ID: id[:16], Created: created.UTC().Format("2006-01-02 15:04"),
				Seen: ago(now.Sub(seen)), Addr: addr, UserAgent: ua, Browser: browserName(ua), Current: id == q.sess.IDHash,
				Action: q.path("/sessions/" + id[:16] + "/signout")})
		})
		if err != nil {
			return err
		}
	}
	return q.render(http.StatusOK, sessionsPageView(v))
}

// ago says how long ago d was, coarsely.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	default:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	}
}

// signOutSession ends one session of the signed-in key, named by the
// first 16 hex digits of its id hash (enough to tell a key's sessions
// apart, and no use to anyone else).
func (u *UI) signOutSession(q *request) error {
	prefix := q.r.PathValue("id")
	l, ok := u.sessions.(sessionLister)
	if !ok || len(prefix) != 16 {
		return &apiError{Status: http.StatusNotFound, Message: "Your key has no such session: it was signed out or has expired."}
	}
	var target string
	err := l.SessionsOf(q.r.Context(), q.sess.PublicKey, func(id, _, _ string, _, _ time.Time) {
		if id[:16] == prefix {
			target = id
		}
	})
	if err != nil {
		return err
	}
	if target == "" {
		return &apiError{Status: http.StatusNotFound, Message: "Your key has no such session: it was signed out or has expired."}
	}
	if target == q.sess.IDHash {
		return u.signOut(q)
	}
	if err := u.sessions.DeleteSession(q.r.Context(), target); err != nil {
		return err
	}
	return q.redirect("/sessions?done=one")
}

// signOutEverywhere ends every session of the signed-in key, this one
// included.
func (u *UI) signOutEverywhere(q *request) error {
	l, ok := u.sessions.(sessionLister)
	if !ok {
		return u.signOut(q)
	}
	if _, err := l.DeleteSessionsOf(q.r.Context(), q.sess.PublicKey); err != nil {
		return err
	}
	http.SetCookie(q.w, u.cookie(q.r, sessionCookie, "", -1))
	http.Redirect(q.w, q.r, u.cfg.Prefix+"/signin?out=all", http.StatusSeeOther)
	return nil
}

// browserName names a user agent briefly: the first known browser and
// system it mentions, or the start of the string.
func browserName(ua string) string {
	name := ""
	for _, b := range [][2]string{{"Edg/", "Edge"}, {"Firefox/", "Firefox"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"}, {"curl/", "curl"}} {
		if strings.Contains(ua, b[0]) {
			name = b[1]
			break
		}
	}
	for _, s := range [][2]string{{"Android", "Android"}, {"iPhone", "iOS"}, {"iPad", "iPadOS"}, {"Windows", "Windows"}, {"Mac OS X", "macOS"}, {"Linux", "Linux"}} {
		if name != "" && strings.Contains(ua, s[0]) {
			return name + " on " + s[1]
		}
	}
	if name != "" {
		return name
	}
	if len(ua) > 40 {
		return strings.ToValidUTF8(ua[:40], "") + "…"
	}
	return ua
}
