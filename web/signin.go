package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
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
	if _, err := u.startSession(w, r, v.PublicKey, priv); err != nil {
		u.fail(w, r, err)
		return
	}
	u.rememberDevice(w, r, v.PublicKey)
	http.SetCookie(w, u.cookie(r, signinCookie, "", -1))
	http.Redirect(w, r, v.Next, http.StatusSeeOther)
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
