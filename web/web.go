package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

// Config is the admin UI's configuration. The zero value works.
type Config struct {
	// Prefix is the path the UI is served under; default "/admin".
	Prefix string
	// IdleTimeout ends a session that has made no request for this long;
	// default 30 minutes.
	IdleTimeout time.Duration
	// MaxAge ends a session this long after sign-in, however active; default
	// 12 hours.
	MaxAge time.Duration
	// TrustedProxies lists proxy addresses or CIDR ranges whose
	// X-Forwarded-Proto (and -For) headers are believed, as the API's
	// trustedProxies; a session cookie is marked Secure when the request came
	// over TLS or through such a proxy with X-Forwarded-Proto: https.
	TrustedProxies []string
	// Logger receives server errors; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Defaults fills in the unset fields.
func (c *Config) Defaults() {
	if c.Prefix == "" {
		c.Prefix = "/admin"
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 30 * time.Minute
	}
	if c.MaxAge == 0 {
		c.MaxAge = 12 * time.Hour
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports the first problem with the configuration.
func (c *Config) Validate() error {
	if !strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/") {
		return fmt.Errorf("web: prefix %q must start and not end with /", c.Prefix)
	}
	if c.IdleTimeout < 0 || c.MaxAge < 0 || c.IdleTimeout > c.MaxAge {
		return errors.New("web: idle timeout and max age must be positive, idle timeout at most max age")
	}
	if _, err := api.ParseAddressList(c.TrustedProxies); err != nil {
		return fmt.Errorf("web: trusted proxies: %w", err)
	}
	return nil
}

// UI is the admin UI as an http.Handler.
type UI struct {
	cfg      Config
	api      http.Handler
	sessions SessionStore
	proxies  api.AddressList
	throttle *throttle
	// limits is the API's rate limit on sign-ins, when its handler has
	// one (signInLimiter).
	limits signInLimiter
	// deviceKey signs the cookies of browsers that signed in (throttle.go);
	// random per instance, as the throttle's counts are.
	deviceKey []byte
	mux       *http.ServeMux
	// handler is mux behind the cross-origin protection.
	handler http.Handler
}

// New builds the UI on top of the REST API handler apiHandler; sessions
// keeps the signed-in sessions (shared by every instance).
func New(cfg Config, apiHandler http.Handler, sessions SessionStore) (*UI, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if apiHandler == nil || sessions == nil {
		return nil, errors.New("web: the API handler and a session store are required")
	}
	u := &UI{cfg: cfg, api: apiHandler, sessions: sessions, throttle: newThrottle(cfg.Now), mux: http.NewServeMux(),
		deviceKey: []byte(randomToken())}
	u.proxies, _ = api.ParseAddressList(cfg.TrustedProxies) // checked by Validate
	u.limits, _ = apiHandler.(signInLimiter)
	u.routes()
	// Why beside the CSRF tokens: the browser says where a post comes from
	// (Sec-Fetch-Site, or Origin against Host), so a post from another site
	// is refused before any page runs, whatever token it carries.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(u.crossOrigin))
	u.handler = cop.Handler(u.mux)
	return u, nil
}

// crossOrigin answers a post that came from another site.
func (u *UI) crossOrigin(w http.ResponseWriter, r *http.Request) {
	_ = writePage(w, r, http.StatusForbidden, errorPage(errorView{Prefix: u.cfg.Prefix, Status: http.StatusForbidden,
		Message: "This form was sent from another site, so it was refused. Use the form on this site's own page."}))
}

// routes lists every page. Pages that need a session go through signedIn;
// every POST also checks the CSRF token there.
func (u *UI) routes() {
	p := u.cfg.Prefix
	u.mux.Handle("GET "+p+"/assets/", http.StripPrefix(p+"/assets/", assetHandler()))
	u.mux.HandleFunc("GET "+p+"/signin", u.getSignIn)
	u.mux.HandleFunc("POST "+p+"/signin", u.postSignIn)
	page := func(pattern string, h func(*request) error) {
		u.mux.Handle(pattern, u.signedIn(h))
	}
	page("POST "+p+"/signout", u.signOut)
	page("GET "+p+"/{$}", u.overview)
	page("GET "+p+"/users", u.users)
	page("GET "+p+"/users/{user}", u.images)
	page("GET "+p+"/users/{user}/erase", u.confirmErase)
	page("POST "+p+"/users/{user}/erase", u.erase)
	page("GET "+p+"/users/{user}/erasure", u.erasure)
	page("GET "+p+"/users/{user}/erasure/receipt", u.receipt)
	page("POST "+p+"/users/{user}/quota", u.saveQuota)
	page("GET "+p+"/users/{user}/images/{image}", u.image)
	page("POST "+p+"/users/{user}/images/{image}/metadata", u.saveMetadata)
	page("POST "+p+"/users/{user}/images/{image}/shorturls", u.createShortURL)
	page("POST "+p+"/users/{user}/images/{image}/shorturls/delete", u.deleteShortURL)
	page("GET "+p+"/users/{user}/images/{image}/delete", u.confirmDelete)
	page("POST "+p+"/users/{user}/images/{image}/delete", u.deleteImage)
	page("GET "+p+"/search", u.search)
	page("POST "+p+"/bulk", u.bulk)
	page("GET "+p+"/bulk/delete", u.confirmBulkDelete)
	page("POST "+p+"/bulk/delete", u.bulkDelete)
	page("GET "+p+"/playground", u.playground)
	page("GET "+p+"/playground/preview", u.playgroundPreview)
	page("GET "+p+"/upload", u.uploadForm)
	page("POST "+p+"/upload", u.upload)
	page("POST "+p+"/upload/token", u.uploadToken)
	page("GET "+p+"/keys", u.keys)
	page("POST "+p+"/keys", u.createKey)
	page("GET "+p+"/keys/{pk}", u.key)
	page("GET "+p+"/keys/{pk}/rotate", u.confirmRotate)
	page("POST "+p+"/keys/{pk}/rotate", u.rotateKey)
	page("POST "+p+"/keys/{pk}/delete", u.deleteKey)
	page("POST "+p+"/keys/{pk}/rules", u.addRule)
	page("GET "+p+"/keys/{pk}/rules/{id}/delete", u.confirmDeleteRule)
	page("POST "+p+"/keys/{pk}/rules/{id}/delete", u.deleteRule)
	page("GET "+p+"/groups", u.groups)
	page("POST "+p+"/groups", u.createGroup)
	page("GET "+p+"/groups/{group}", u.group)
	page("POST "+p+"/groups/{group}", u.saveGroup)
	page("GET "+p+"/groups/{group}/delete", u.confirmDeleteGroup)
	page("POST "+p+"/groups/{group}/delete", u.deleteGroup)
	page("GET "+p+"/access", u.access)
	page("GET "+p+"/filters", u.filters)
	page("POST "+p+"/filters/reload", u.reloadFilters)
	page("POST "+p+"/filters/deploy", u.deployFilter)
	page("POST "+p+"/filters/{name}/rollback", u.rollbackFilter)
	page("POST "+p+"/filters/{name}/enabled", u.enableFilter)
	page("POST "+p+"/filters/{name}/canary", u.canaryFilter)
	page("GET "+p+"/audit", u.audit)
	page("GET "+p+"/webhooks", u.webhooks)
	page("POST "+p+"/webhooks", u.createWebhook)
	page("GET "+p+"/webhooks/{id}", u.webhook)
	page("POST "+p+"/webhooks/{id}", u.saveWebhook)
	page("POST "+p+"/webhooks/{id}/ping", u.pingWebhook)
	page("GET "+p+"/webhooks/{id}/delete", u.confirmDeleteWebhook)
	page("POST "+p+"/webhooks/{id}/delete", u.deleteWebhook)
	page("POST "+p+"/webhooks/{id}/deliveries/{delivery}/redeliver", u.redeliver)
	page("GET "+p+"/blocklist", u.blocklist)
	page("POST "+p+"/blocklist", u.addBlocklist)
	page("GET "+p+"/blocklist/{id}", u.blocklistEntry)
	page("GET "+p+"/blocklist/{id}/remove", u.confirmRemoveBlocked)
	page("POST "+p+"/blocklist/{id}/remove", u.removeBlocked)
	page("GET "+p+"/blocklist/{id}/delete", u.confirmDeleteBlocklist)
	page("POST "+p+"/blocklist/{id}/delete", u.deleteBlocklist)
	page("GET "+p+"/sessions", u.sessionsPage)
	page("POST "+p+"/sessions/{id}/signout", u.signOutSession)
	page("POST "+p+"/sessions/signout-all", u.signOutEverywhere)
	u.mux.Handle(p, http.RedirectHandler(p+"/", http.StatusSeeOther))
	page(p+"/", u.notFound)
}

// ServeHTTP sets the security headers every response carries and serves
// the page; a post from another site is refused (403).
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Why no 'unsafe-inline' anywhere: every script and style is an
	// embedded file, so an injected tag or attribute cannot run. img-src
	// allows blob: for the upload previews made by upload.js; media-src lets
	// the image page play a video.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; media-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	u.handler.ServeHTTP(w, r)
}

// secure reports whether the browser reached the service over HTTPS.
func (u *UI) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return u.fromTrustedProxy(r) && r.Header.Get("X-Forwarded-Proto") == "https"
}

func (u *UI) fromTrustedProxy(r *http.Request) bool { return api.FromTrustedProxy(r, u.proxies) }

// clientAddr is the address failed sign-ins are counted against: the peer,
// or the nearest untrusted X-Forwarded-For hop behind a trusted proxy.
func (u *UI) clientAddr(r *http.Request) string { return api.ClientIP(r, u.proxies).String() }
