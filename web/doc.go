// Package web is vitrine's admin UI: server-rendered pages (templ) served
// under /admin by the same binary. It is a client of the REST API: every
// page calls the api http.Handler in process with requests signed by the
// signed-in key, so a page can do exactly what that key may do through the
// API, and says so when the API refuses.
//
// The browser holds only a random session id (an HttpOnly, SameSite=Strict
// cookie); the key pair stays on the server in the session store. Every form
// carries a CSRF token and works without JavaScript; the embedded scripts
// only enhance (live preview, drag and drop, upload progress).
package web
