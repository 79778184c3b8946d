package web

import (
	"crypto/subtle"
	"net/http"
)

// CSRF defence. A signed-in session has one random token, stored with the
// session and embedded in every form as the hidden field csrfField; a POST
// whose field does not match is refused. The sign-in form, which has no
// session yet, uses a double-submit token instead: a random value in a
// short-lived SameSite=Strict cookie that the form must repeat. SameSite
// cookies alone would stop most cross-site posts; the tokens also cover
// same-site attackers and old browsers. In front of both, the UI's handler
// (web.go) is behind http.CrossOriginProtection, which refuses a post the
// browser says came from another origin (Sec-Fetch-Site, or else an Origin
// that is not the Host).

const (
	csrfField    = "csrf"
	signinCookie = "vitrine_signin"
	// maxFormBytes bounds a posted form, uploads included.
	maxFormBytes = 256 << 20
)

// validCSRF reports whether the form's token equals want.
func validCSRF(r *http.Request, want string) bool {
	got := r.PostFormValue(csrfField)
	if got == "" {
		// Multipart forms (uploads) are parsed by FormValue.
		got = r.FormValue(csrfField)
	}
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// signinToken returns the sign-in form's token, setting its cookie when the
// browser has none yet.
func (u *UI) signinToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(signinCookie); err == nil && len(c.Value) == 64 {
		return c.Value
	}
	t := randomToken()
	http.SetCookie(w, u.cookie(r, signinCookie, t, 3600))
	return t
}

// validSigninCSRF checks the double-submit token of the sign-in form.
func validSigninCSRF(r *http.Request) bool {
	c, err := r.Cookie(signinCookie)
	return err == nil && validCSRF(r, c.Value)
}
