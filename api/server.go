package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/api/ratelimit"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// Deps are the long-lived components the API works with.
type Deps struct {
	DB     *storage.DB
	Blobs  *storage.Blobs
	Engine *engine.Engine
	// Logger receives server errors; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Filters serves GET /filters and POST /filters/reload; nil lists none.
	Filters FilterAdmin
	// Variants is the shared variant cache; default an unbounded one on DB
	// and Blobs whose last-use times are never flushed (the App in package main passes one
	// it runs and closes).
	Variants *storage.VariantCache
	// Collector deletes queued blobs; the server wakes it after a delete.
	// Default: none, and the queue waits for whichever collector runs on
	// the database (the App in package main runs one in every instance).
	Collector Waker
	// Erasures erases users in the background; the server wakes it after
	// a DELETE /users/<user>. Default: none, and the erasure waits for
	// whichever worker runs on the database (the App in package main runs
	// one in every instance).
	Erasures Waker
	// Variations builds stored variations: it says which uploads get them
	// (their job is queued in the upload's transaction), the server wakes
	// it after such an upload, and its presence turns the variation picker
	// on (GET of a transformed image decodes the smallest stored variation
	// that holds enough pixels). Default: none, and every image renders
	// from its original.
	Variations VariationBuilder
	// Readiness, when set, says why the instance is not ready yet (filters
	// still loading, a filter failed): /readyz answers 503 with those
	// reasons while it returns any. Default: ready from the start.
	Readiness func() []string
	// Metrics, when set, receives request and cache metrics.
	Metrics *Metrics
	// AccessLog, when set, gets one line per request (with its X-Request-Id).
	AccessLog *slog.Logger
	// Usage, when set, counts requests per key and status, uploads and
	// variant cache results per day (GET /usage and the admin UI's charts).
	Usage *storage.Usage
	// Outbound configures the guard that fetches the images of uploads
	// by URL (api/README.md, Ingestion by URL): its allowlist (outbound.allow)
	// and, in tests, its resolver and dialer; the server sets its caps
	// (uploads.urlTimeout, uploads.urlConnectTimeout, limits.maxBodyBytes).
	// The zero value refuses every address the guard's ranges list.
	Outbound outbound.Config
	// Webhooks, when set, offers /webhooks: subscriptions are checked
	// against it and a test ping goes through it (the outbound guard).
	// Default: none, and /webhooks answers 404.
	Webhooks *outbound.Guard
	// UploadParts, when set, keeps the parts of resumable uploads (a
	// staging folder, uploads.stagingDir); default Blobs.
	UploadParts *storage.Blobs
	// Sinks, when set, reports the sinks of the events outbox in GET
	// /status. Default: none listed.
	Sinks SinkReporter
	// RateLimits, when set, limits requests per class, public key and
	// client address (api/README.md, Rate limits); the caller closes it after the
	// server stopped. Default: no limits.
	RateLimits *ratelimit.Limiter
	// Writes, when set, admits writes under the store's write pause
	// (WriteGate). Default: every write admitted.
	Writes *WriteGate
}

// Waker is a background worker that the server tells when it queued work
// for it.
type Waker interface{ Wake() }

// VariationBuilder builds stored variations in the background: Wants says
// whether an upload of width x height pixels and size bytes gets them,
// and Wake that one was queued.
type VariationBuilder interface {
	Waker
	Wants(width, height int, size int64) bool
}

// Server is the REST interface as an http.Handler.
type Server struct {
	cfg Config
	// writes admits writes under the store's write pause; nil admits all.
	writes *WriteGate
	stores
	blobs      blobStore
	dbHealth   pinger
	blobHealth pinger
	variants   variantCache
	collector  Waker
	// erasureWorker erases users; it is woken after a DELETE of a user.
	erasureWorker Waker
	// builder decides which uploads get variations and is woken after
	// one; variations, when set, lists the stored variations the picker
	// chooses from.
	builder    VariationBuilder
	variations variationStore
	// videos keeps the posters of videos (video.go).
	videos    videoStore
	flight    flight
	draining  atomic.Bool
	readiness func() []string
	// webhooks is nil while webhooks are off; guard checks their URLs.
	webhooks  webhookStore
	guard     *outbound.Guard
	ingest    *outbound.Guard // fetches the images of uploads by URL
	metrics   *Metrics
	accessLog *slog.Logger
	usage     *storage.Usage
	limits    *ratelimit.Limiter
	sinks     SinkReporter
	ids       *requestIDs
	// blocklist checks uploads against the takedown blocklist.
	blocklist *blocklist
	engine    *engine.Engine
	filters   FilterAdmin
	deploys   filterDeployStore
	log       *slog.Logger
	now       func() time.Time
	acl       *accessControl
	routes    []*route
	// imagesRoute is POST /users/<user>/images, which a resumable upload
	// ends in; tus serves resumable uploads.
	imagesRoute *route
	tus         *tus
	// Bus carries `<resource>.<method>` events; subscribe listeners before
	// serving.
	Bus *Bus

	statsAllow, trustedProxies prefixList
}

// New builds a Server; cfg gets its defaults and is validated.
func New(cfg Config, d Deps) (*Server, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.DB == nil || d.Blobs == nil || d.Engine == nil {
		return nil, fmt.Errorf("api: DB, Blobs and Engine are required")
	}
	s := &Server{cfg: cfg, stores: newStores(d.DB), blobs: d.Blobs, dbHealth: d.DB, blobHealth: d.Blobs,
		engine: d.Engine, filters: d.Filters, deploys: d.DB, log: d.Logger, now: d.Now, Bus: &Bus{},
		metrics: d.Metrics, accessLog: d.AccessLog, usage: d.Usage, limits: d.RateLimits, sinks: d.Sinks, ids: newRequestIDs()}
	s.acl = newAccessControl(cfg.AccessControl, d.DB)
	s.videos = videoStore{db: d.DB, blobs: d.Blobs}
	s.blocklist = &blocklist{store: d.DB, now: d.Now}
	s.readiness = d.Readiness
	if d.Webhooks != nil {
		s.webhooks, s.guard = d.DB, d.Webhooks
	}
	var err error
	if s.ingest, err = ingestGuard(cfg, d.Outbound); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	s.writes = d.Writes
	s.collector, s.erasureWorker = noWaker{}, noWaker{}
	if d.Collector != nil {
		s.collector = d.Collector
	}
	if d.Erasures != nil {
		s.erasureWorker = d.Erasures
	}
	s.builder = noBuilder{}
	if d.Variations != nil {
		s.builder, s.variations = d.Variations, d.DB
	}
	s.variants = d.Variants
	if d.Variants == nil {
		if s.variants, err = storage.NewVariantCache(d.DB, d.Blobs, storage.CacheConfig{}); err != nil {
			return nil, err
		}
	}
	if s.statsAllow, err = newPrefixList(cfg.StatsAllow); err != nil {
		return nil, err
	}
	if s.trustedProxies, err = newPrefixList(cfg.TrustedProxies); err != nil {
		return nil, err
	}
	parts := d.UploadParts
	if parts == nil {
		parts = d.Blobs
	}
	if s.tus, err = newTus(s, storage.NewResumable(parts, cfg.Uploads.PartSize)); err != nil {
		return nil, err
	}
	s.routes = s.buildRoutes()
	if err := checkScopes(s.routes); err != nil {
		return nil, err
	}
	s.Bus.On("*", 500, s.checkAccess)
	s.Bus.On("*", 100, s.authenticate)
	return s, nil
}

// noWaker stands in when no collector was given.
type noWaker struct{}

func (noWaker) Wake() {}

// noBuilder stands in when no variation builder was given: no upload gets
// variations.
type noBuilder struct{ noWaker }

func (noBuilder) Wants(int, int, int64) bool { return false }

func (s *Server) buildRoutes() []*route {
	r := func(name, path string, jsonExt bool, h map[string]handler) *route {
		var segs []string
		if p := strings.Trim(path, "/"); p != "" {
			segs = strings.Split(p, "/")
		}
		return &route{name: name, segs: segs, jsonExt: jsonExt, handlers: h}
	}
	image := r("image", "/users/{user}/images/{image}", false, map[string]handler{
		"GET": s.getImage, "DELETE": s.deleteImage,
	})
	image.imageExt = true
	s.imagesRoute = r("images", "/users/{user}/images", true, map[string]handler{"GET": s.listImages, "POST": s.postImage})
	// An upload by URL is images.post too (access, upload tokens, CORS,
	// listeners), with an operation of its own in api/openapi.yaml so that
	// generated clients tell it from an upload of bytes. It comes before
	// image: "url" is no image identifier (an MD5).
	byURL := r("images", "/users/{user}/images/url", true, map[string]handler{"POST": s.postImage})
	byURL.byURL = true
	metadata := map[string]handler{"GET": s.getMetadata, "PUT": s.putMetadata, "POST": s.postMetadata, "DELETE": s.deleteMetadata}
	return []*route{
		r("index", "/", false, map[string]handler{"GET": s.getIndex}),
		r("status", "/status", true, map[string]handler{"GET": s.getStatus}),
		r("stats", "/stats", true, map[string]handler{"GET": s.getStats}),
		r("transformations", "/transformations", true, map[string]handler{"GET": s.getTransformations}),
		r("globalshorturl", "/s/{id}", false, map[string]handler{"GET": s.getShortURL}),
		r("user", "/users/{user}", true, map[string]handler{"GET": s.getUser, "DELETE": s.deleteUser}),
		r("user", "/users/{user}/erasure", true, map[string]handler{"GET": s.getErasure}),
		r("user", "/users/{user}/erasure/receipt", true, map[string]handler{"GET": s.getReceipt}),
		r("quota", "/users/{user}/quota", true, map[string]handler{"GET": s.getQuota, "PUT": s.putQuota}),
		s.imagesRoute,
		byURL,
		image,
		r("metadata", "/users/{user}/images/{image}/metadata", true, metadata),
		r("metadata", "/users/{user}/images/{image}/meta", true, metadata),
		r("shorturls", "/users/{user}/images/{image}/shorturls", true, map[string]handler{
			"GET": s.listShortURLs, "POST": s.postShortURL, "DELETE": s.deleteShortURLs}),
		r("shorturl", "/users/{user}/images/{image}/shorturls/{id}", true, map[string]handler{
			"GET": s.getShortURLParams, "DELETE": s.deleteShortURL}),
		r("variants", "/users/{user}/images/{image}/variants", true, map[string]handler{"GET": s.listVariants}),
		r("globalimages", "/images", true, map[string]handler{"GET": s.listGlobalImages}),
		r("groups", "/groups", true, map[string]handler{"GET": s.listGroups}),
		r("filters", "/filters", true, map[string]handler{"GET": s.listFilters}),
		r("filters", "/filters/reload", true, map[string]handler{"POST": s.reloadFilters}),
		r("filters", "/filters/{filter}", false, map[string]handler{"PUT": s.putFilter, "PATCH": s.patchFilter,
			"DELETE": s.deleteFilter}),
		r("filters", "/filters/{filter}/rollback", true, map[string]handler{"POST": s.rollbackFilter}),
		r("group", "/groups/{group}", true, map[string]handler{
			"GET": s.getGroup, "PUT": s.putGroup, "DELETE": s.deleteGroup}),
		r("keys", "/keys", true, map[string]handler{"GET": s.listKeys}),
		r("keys", "/keys/{pk}", false, map[string]handler{"HEAD": s.headKey, "PUT": s.putKey, "DELETE": s.deleteKey}),
		r("accessrules", "/keys/{pk}/access", true, map[string]handler{"GET": s.listRules, "POST": s.postRules}),
		r("accessrule", "/keys/{pk}/access/{rule}", true, map[string]handler{
			"GET": s.getRule, "DELETE": s.deleteRule}),
		r("audit", "/audit", true, map[string]handler{"GET": s.getAudit}),
		r("usage", "/usage", true, map[string]handler{"GET": s.getUsage}),
		r("webhooks", "/webhooks", true, map[string]handler{"GET": s.listWebhooks, "POST": s.postWebhook}),
		r("webhook", "/webhooks/{webhook}", true, map[string]handler{
			"GET": s.getWebhook, "PUT": s.putWebhook, "DELETE": s.deleteWebhook}),
		r("webhookping", "/webhooks/{webhook}/ping", true, map[string]handler{"POST": s.pingWebhook}),
		r("webhookdeliveries", "/webhooks/{webhook}/deliveries", true, map[string]handler{"GET": s.listDeliveries}),
		r("webhookdelivery", "/webhooks/{webhook}/deliveries/{delivery}", true, map[string]handler{"GET": s.getDelivery}),
		r("webhookdelivery", "/webhooks/{webhook}/deliveries/{delivery}/redeliver", true, map[string]handler{"POST": s.redeliver}),
		r("uploadtokens", "/users/{user}/uploadtokens", true, map[string]handler{"POST": s.postUploadToken}),
		r("uploadtoken", "/users/{user}/uploadtokens/{token}", true, map[string]handler{"DELETE": s.deleteUploadToken}),
		r("uploads", "/users/{user}/uploads", false, map[string]handler{"POST": s.serveUploads, "OPTIONS": s.serveTusOptions}),
		r("uploads", "/users/{user}/uploads/{upload}", false, map[string]handler{"OPTIONS": s.serveTusOptions,
			"HEAD": s.serveUploads, "PATCH": s.serveUploads, "DELETE": s.serveUploads}),
		r("blocklist", "/blocklist", true, map[string]handler{"GET": s.listBlocklist, "POST": s.postBlocklist}),
		r("blocklist", "/blocklist/{entry}", true, map[string]handler{"GET": s.getBlocklistEntry, "DELETE": s.deleteBlocklistEntry}),
		r("blocklist", "/blocklist/{entry}/remove", true, map[string]handler{"POST": s.removeBlocked}),
	}
}

// call is one request on its way through the service.
type call struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	route     *route
	params    map[string]string
	ext       string
	method    string // upper case; HEAD is served by GET handlers
	publicKey string
	// keyFrom says where publicKey came from, for messages: the header's
	// name or "publicKey=", "" when it is the path user (no key given).
	keyFrom string
	query   url.Values
	// custom is the stats `custom` object listeners fill.
	custom map[string]any
	// varyOrigin is set when CORS applies, so Vary gets Origin.
	varyOrigin bool
	// varyHints are the client hint headers the image answer depends on.
	varyHints []string
	// negotiated is set when the Accept header chose the response type, so
	// Vary gets Accept.
	negotiated bool
	// upload and doc hold what listeners read and change before the
	// resource runs (eventdata.go).
	upload upload
	doc    metadataDoc
	// authed is set once the listeners let the call through: its changes
	// are recorded as made by publicKey, and it counts as the key's use.
	authed bool
	// token is the upload token the call is authorised by (an upload made
	// with one; uploadtokenauth.go), nil for a signed call.
	token *storage.UploadToken
	// signed is set once the call's signature is verified: the image of
	// an upload by URL is fetched only for a call that proved its key or
	// carries an upload token (urlupload.go).
	signed bool
	// tusErr is the service's refusal of a resumable upload request that
	// tusd answered with an error (tus.go).
	tusErr error
}

// event is the `<resource>.<method>` name of the call.
func (c *call) event() string { return c.route.name + "." + strings.ToLower(c.method) }

func (c *call) header(name string) string { return c.s.cfg.HeaderPrefix + "-" + name }

// ServeHTTP routes the request, runs the event's listeners (access control,
// authentication, custom) and then the resource.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveProbe(w, r) || s.serveOpenAPI(w, r) {
		return
	}
	start := time.Now()
	w, rec, id := s.begin(w, r)
	c := &call{s: s, w: w, r: r, method: r.Method, query: r.URL.Query()}
	if err := s.serve(c); err != nil {
		c.writeError(err)
	}
	route := ""
	if c.route != nil {
		route = c.route.name
		nameSpan(r, c.route)
	}
	s.end(rec, r, route, id, start)
	s.countRequest(c, rec)
}

func (s *Server) serve(c *call) error {
	if err := c.limit(classOf(c.method), ratelimit.PerAddress); err != nil {
		return err
	}
	m, err := match(s.routes, c.r.URL.Path)
	if err != nil {
		c.params = map[string]string{}
		return err
	}
	c.route, c.params, c.ext = m.route, m.params, m.ext
	switch {
	case c.method == "BREW":
		return errorf(http.StatusTeapot, "I'm a teapot!")
	case !knownMethods[c.method]:
		return errorf(http.StatusNotImplemented, "Unsupported HTTP method: %s", c.method)
	}
	if s.uploadPreflight(c) || (s.cfg.CORS.enabled() && s.applyCORS(c)) {
		return nil
	}
	if c.route.name == "uploads" && c.method == http.MethodOptions {
		return s.serveTusOptions(c) // no credential needed
	}
	h, ok := c.route.handler(c.method)
	if !ok {
		e := errorf(http.StatusMethodNotAllowed, "Method not allowed")
		e.Header = http.Header{"Allow": {c.route.allowed()}}
		return e
	}
	c.publicKey, c.keyFrom = s.publicKeyOf(c)
	if err := s.useUploadToken(c); err != nil {
		return err
	}
	if c.token != nil && c.route.name == "images" {
		// The policy is checked on what the client sent, before any
		// listener reads it.
		if _, err := c.uploadBody(); err != nil {
			return err
		}
	}
	c.custom = map[string]any{}
	ev := &Event{Name: c.event(), call: c, Stats: c.custom}
	if err := s.Bus.Fire(c.r.Context(), ev); err != nil {
		return err
	}
	c.setActor()
	if c.keyAuthenticated() {
		if err := c.limit(classOf(c.method), ratelimit.PerKey); err != nil {
			return err
		}
	}
	if s.writes != nil && c.method != http.MethodGet && c.method != http.MethodHead && c.method != http.MethodOptions {
		leave, err := s.writes.enter(c.ctx())
		if err != nil {
			return err
		}
		defer leave()
	}
	return h(c)
}

// publicKeyOf picks the acting public key: the PublicKey header (either
// prefix), then the `publicKey` query parameter, then the path user; from
// names the header or the parameter, "" for the path user.
func (s *Server) publicKeyOf(c *call) (key, from string) {
	for _, h := range []string{s.cfg.HeaderPrefix + "-PublicKey", "X-Service-PublicKey", "X-Imbo-PublicKey"} {
		if v := c.r.Header.Get(h); v != "" {
			return v, h
		}
	}
	if v := c.query.Get("publicKey"); v != "" {
		return v, "publicKey="
	}
	return c.params["user"], ""
}

// ctx is the request context.
func (c *call) ctx() context.Context { return c.r.Context() }
