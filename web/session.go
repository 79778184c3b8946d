package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// ErrNoSession is what a SessionStore returns for an unknown session.
var ErrNoSession = errors.New("web: no such session")

// Session is a signed-in browser. The key pair stays here, on the server;
// the browser holds only the id whose SHA-256 is IDHash.
type Session struct {
	IDHash     string
	PublicKey  string
	PrivateKey string
	// CSRF is the token every form of the session must carry.
	CSRF    string
	Created time.Time
	// Seen is the time of the last request, to within touchEvery.
	Seen time.Time
	// Addr and UserAgent are the client address and browser that signed
	// in, shown on the sessions page.
	Addr, UserAgent string
}

// SessionStore keeps sessions where every instance sees them (the
// database). Session returns ErrNoSession for an unknown id hash.
type SessionStore interface {
	CreateSession(ctx context.Context, s Session) error
	Session(ctx context.Context, idHash string) (Session, error)
	TouchSession(ctx context.Context, idHash string, at time.Time) error
	DeleteSession(ctx context.Context, idHash string) error
	// DeleteSessionsBefore removes sessions created before created or last
	// seen before seen.
	DeleteSessionsBefore(ctx context.Context, created, seen time.Time) error
}

const sessionCookie = "vitrine_session"

// touchEvery is how stale Seen may get before a request writes it again;
// why: one write per page view would make every read a database write.
const touchEvery = time.Minute

// randomToken returns 32 random bytes, hex-encoded.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("web: no randomness: " + err.Error()) // crypto/rand never fails on supported systems
	}
	return hex.EncodeToString(b)
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// startSession stores a new session for the key pair and sets its cookie.
func (u *UI) startSession(w http.ResponseWriter, r *http.Request, publicKey, privateKey string) (Session, error) {
	now := u.cfg.Now().UTC()
	// Expired sessions are removed here rather than by a timer, so the UI
	// needs no background goroutine; any instance's sign-in cleans up.
	if err := u.sessions.DeleteSessionsBefore(r.Context(), now.Add(-u.cfg.MaxAge), now.Add(-u.cfg.IdleTimeout)); err != nil {
		u.cfg.Logger.Warn("web: removing expired sessions", "err", err)
	}
	id := randomToken()
	s := Session{IDHash: hashID(id), PublicKey: publicKey, PrivateKey: privateKey, CSRF: randomToken(),
		Created: now, Seen: now, Addr: u.clientAddr(r), UserAgent: r.UserAgent()}
	if err := u.sessions.CreateSession(r.Context(), s); err != nil {
		return Session{}, err
	}
	http.SetCookie(w, u.cookie(r, sessionCookie, id, 0))
	return s, nil
}

// cookie builds an HttpOnly, SameSite=Strict cookie scoped to the UI;
// maxAge < 0 deletes it, 0 makes it last for the browser session.
func (u *UI) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: u.cfg.Prefix, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: u.secure(r)}
}

// session returns the request's live session; ok is false when there is
// none or it has expired (an expired one is deleted).
func (u *UI) session(r *http.Request) (Session, bool, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) != 64 {
		return Session{}, false, nil
	}
	s, err := u.sessions.Session(r.Context(), hashID(c.Value))
	if errors.Is(err, ErrNoSession) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, err
	}
	now := u.cfg.Now().UTC()
	if now.Sub(s.Created) > u.cfg.MaxAge || now.Sub(s.Seen) > u.cfg.IdleTimeout {
		return Session{}, false, u.sessions.DeleteSession(r.Context(), s.IDHash)
	}
	if now.Sub(s.Seen) > touchEvery {
		if err := u.sessions.TouchSession(r.Context(), s.IDHash, now); err != nil {
			return Session{}, false, err
		}
	}
	return s, true, nil
}

// signedIn wraps a page that needs a session: without one, GET requests
// go to the sign-in page (and come back after) and POSTs are refused; a
// POST must carry the session's CSRF token.
func (u *UI) signedIn(h func(*request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		s, ok, err := u.session(r)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		if !ok {
			if r.Method != http.MethodGet {
				http.Error(w, "Your session has ended; sign in again.", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, u.cfg.Prefix+"/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !validCSRF(r, s.CSRF) {
				http.Error(w, "This form has expired or did not come from this site (missing or wrong CSRF token). "+
					"Go back, reload the page and try again.", http.StatusForbidden)
				return
			}
		}
		q := &request{ui: u, w: w, r: r, sess: s, api: u.client(r, s)}
		// Every page starts with the key's own rules, which any working key
		// may read: a refusal means the key was rotated or deleted since
		// sign-in, and the session ends here rather than on a page that
		// fails with "Incorrect access token".
		if _, err := q.ownRules(r.Context()); err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status >= 500 {
				u.fail(w, r, err)
				return
			}
			if err := u.sessions.DeleteSession(r.Context(), s.IDHash); err != nil {
				u.fail(w, r, err)
				return
			}
			http.SetCookie(w, u.cookie(r, sessionCookie, "", -1))
			next := ""
			if r.Method == http.MethodGet {
				next = "&next=" + url.QueryEscape(r.URL.RequestURI())
			}
			http.Redirect(w, r, u.cfg.Prefix+"/signin?ended=key"+next, http.StatusSeeOther)
			return
		}
		if err := h(q); err != nil {
			q.fail(err)
		}
	})
}

// renew replaces the request's session by a new one for the key pair
// (after its own private key was rotated), so the browser stays signed in
// and the old session id stops working.
func (q *request) renew(privateKey string) error {
	s, err := q.ui.startSession(q.w, q.r, q.sess.PublicKey, privateKey)
	if err != nil {
		return err
	}
	if err := q.ui.sessions.DeleteSession(q.r.Context(), q.sess.IDHash); err != nil {
		return err
	}
	q.sess, q.api, q.rules = s, q.ui.client(q.r, s), nil
	return nil
}

// signOut ends the session everywhere: the row goes, so the cookie stops
// working on every instance even if it was copied.
func (u *UI) signOut(q *request) error {
	if err := u.sessions.DeleteSession(q.r.Context(), q.sess.IDHash); err != nil {
		return err
	}
	http.SetCookie(q.w, u.cookie(q.r, sessionCookie, "", -1))
	http.Redirect(q.w, q.r, u.cfg.Prefix+"/signin?out=1", http.StatusSeeOther)
	return nil
}
