package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// signinView is the sign-in form.
type signinView struct {
	Prefix    string
	CSRF      string
	Next      string
	PublicKey string
	Error     string
	Notice    string
}

func (u *UI) getSignIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	v := signinView{Prefix: u.cfg.Prefix, CSRF: u.signinToken(w, r), Next: safeNext(u.cfg.Prefix, r.URL.Query().Get("next"))}
	switch {
	case r.URL.Query().Get("out") == "all":
		v.Notice = "Your key is signed out everywhere."
	case r.URL.Query().Get("out") != "":
		v.Notice = "You are signed out."
	case r.URL.Query().Get("ended") == "key":
		v.Notice = "Your session has ended: its key was rotated or deleted since you signed in. " +
			"Sign in again with the key's current private key."
	}
	_ = writePage(w, r, http.StatusOK, signinPage(v))
}

// postSignIn checks the key pair by asking the API for the key's own
// access rules, which any valid key may read; the pair is stored in a new
// session only when the API accepts the signature.
func (u *UI) postSignIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	v := signinView{Prefix: u.cfg.Prefix, CSRF: u.signinToken(w, r), Next: safeNext(u.cfg.Prefix, r.PostFormValue("next")),
		PublicKey: strings.TrimSpace(r.PostFormValue("publicKey"))}
	if !validSigninCSRF(r) {
		v.Error = "This form has expired. Please try again."
		_ = writePage(w, r, http.StatusForbidden, signinPage(v))
		return
	}
	// Counted after the CSRF check: an attempt without a form token tests
	// no key.
	if err := u.limitSignIn(w, r, ""); err != nil {
		u.refuseSignIn(w, r, v, err)
		return
	}
	scope := u.throttleScope(r, v.PublicKey)
	if d := u.throttle.wait(scope, v.PublicKey); d > 0 {
		secs := int(math.Ceil(d.Seconds()))
		w.Header().Set("Retry-After", fmt.Sprint(secs))
		v.Error = "Too many failed sign-ins from your address. Try again in " + seconds(secs) + "."
		_ = writePage(w, r, http.StatusTooManyRequests, signinPage(v))
		return
	}
	priv := r.PostFormValue("privateKey")
	if v.PublicKey == "" || priv == "" {
		v.Error = "Enter both the public key and the private key."
		_ = writePage(w, r, http.StatusBadRequest, signinPage(v))
		return
	}
	c := u.client(r, Session{PublicKey: v.PublicKey, PrivateKey: priv})
	var rules []any
	err := c.getJSON(r.Context(), "/keys/"+url.PathEscape(v.PublicKey)+"/access", nil, &rules)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests {
		// The API's rate limit on reads, not a verdict on the key pair.
		v.Error = ae.Message
		_ = writePage(w, r, http.StatusTooManyRequests, signinPage(v))
		return
	}
	if errors.As(err, &ae) && ae.Status < 500 {
		u.throttle.fail(scope, v.PublicKey)
		v.Error = "That public and private key pair is not valid here."
		_ = writePage(w, r, http.StatusUnauthorized, signinPage(v))
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.throttle.succeed(scope, v.PublicKey)
	if err := u.limitSignIn(w, r, v.PublicKey); err != nil {
		u.refuseSignIn(w, r, v, err)
		return
	}
	if _, err := u.startSession(w, r, v.PublicKey, priv); err != nil {
		u.fail(w, r, err)
		return
	}
	u.rememberDevice(w, r, v.PublicKey)
	http.SetCookie(w, u.cookie(r, signinCookie, "", -1))
	http.Redirect(w, r, v.Next, http.StatusSeeOther)
}

// signInLimiter is the rate limit on sign-ins (the signin class of
// rateLimits); *api.Server is one. LimitSignIn counts an attempt per client
// address when publicKey is empty, and a verified key pair per public key;
// it adds the RateLimit headers to h and returns an *api.Error (429) past
// the limit.
type signInLimiter interface {
	LimitSignIn(r *http.Request, h http.Header, publicKey string) error
}

// limitSignIn counts a sign-in with the API's limiter, when there is one.
func (u *UI) limitSignIn(w http.ResponseWriter, r *http.Request, publicKey string) error {
	if u.limits == nil {
		return nil
	}
	return u.limits.LimitSignIn(r, w.Header(), publicKey)
}

// refuseSignIn shows the form again with the rate limit's refusal (its
// status, message and Retry-After).
func (u *UI) refuseSignIn(w http.ResponseWriter, r *http.Request, v signinView, err error) {
	var e *api.Error
	if !errors.As(err, &e) {
		u.fail(w, r, err)
		return
	}
	for k, vals := range e.Header {
		w.Header()[k] = vals
	}
	v.Error = e.Msg
	_ = writePage(w, r, e.Status, signinPage(v))
}

// safeNext keeps a post-sign-in destination inside the UI.
func safeNext(prefix, next string) string {
	if strings.HasPrefix(next, prefix+"/") && !strings.HasPrefix(next, "//") && !strings.Contains(next, `\`) &&
		!strings.HasPrefix(next, prefix+"/signin") {
		return next
	}
	return prefix + "/"
}

// seconds is "1 second" or "n seconds".
func seconds(n int) string {
	if n == 1 {
		return "1 second"
	}
	return fmt.Sprintf("%d seconds", n)
}
