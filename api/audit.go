package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// auditStore reads and adds to the audit log and the usage counters.
type auditStore interface {
	RecordAudit(ctx context.Context, action, target string, detail map[string]any) error
	AuditLog(ctx context.Context, q storage.AuditQuery) ([]storage.AuditEntry, int, error)
	UsageSince(ctx context.Context, metric, since string) ([]storage.UsageCount, error)
	UsageLast(ctx context.Context, metric string) (map[string]time.Time, error)
	KeysCreated(ctx context.Context) (map[string]time.Time, error)
}

// setActor marks the call as let through and makes storage record its
// changes as made by its public key from its client address.
func (c *call) setActor() {
	c.authed = true
	a := storage.Actor{Key: c.publicKey, Addr: c.clientIP().String()}
	c.r = c.r.WithContext(storage.WithActor(c.r.Context(), a))
}

// countRequest counts a finished request per status and, when the key was
// let through, per public key.
func (s *Server) countRequest(c *call, rec *recorder) {
	if s.usage == nil || rec == nil {
		return
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	s.usage.Add(storage.MetricRequests, strconv.Itoa(status), 1)
	if c.authed && c.publicKey != "" {
		s.usage.Add(storage.MetricKeyRequests, c.publicKey, 1)
	}
}

// countVariant counts a variant cache lookup and, on a miss, its render
// time.
func (s *Server) countVariant(hit bool, d time.Duration) {
	if hit {
		s.usage.Add(storage.MetricVariantHits, "", 1)
		return
	}
	s.usage.Add(storage.MetricVariantMisses, "", 1)
	s.usage.Add(storage.MetricRenders, "", 1)
	s.usage.Add(storage.MetricRenderMicros, "", d.Microseconds())
}

// getAudit serves GET /audit (resource audit.get, in the built-in group
// all): the audit log, newest first, filtered by actor, action (a trailing
// "." matches a prefix), user, since and until (RFC 3339 or YYYY-MM-DD),
// and paged.
func (s *Server) getAudit(c *call) error {
	q := storage.AuditQuery{Actor: c.query.Get("actor"), Action: c.query.Get("action"), User: c.query.Get("user")}
	// A key whose audit.get is not on "*" reads one of its users' changes
	// at a time: the log also holds every other user's.
	g, err := s.grantedUsers(c)
	if err != nil {
		return err
	}
	if !g.all && (q.User == "" || !g.has(q.User)) {
		return errorf(http.StatusBadRequest, "Permission denied (public key): the key's rules grant audit.get on %s only; "+
			"ask for one of them with user=<name>", describeUsers(g.users))
	}
	if q.Page, err = intParam(c.query, "page", 1, 1, 1<<30); err != nil {
		return err
	}
	if q.Limit, err = intParam(c.query, "limit", 50, 1, 100); err != nil {
		return err
	}
	if q.Since, err = timeParam(c.query.Get("since"), "since", false); err != nil {
		return err
	}
	if q.Until, err = timeParam(c.query.Get("until"), "until", true); err != nil {
		return err
	}
	entries, n, err := s.auditLog.AuditLog(c.ctx(), q)
	if err != nil {
		return err
	}
	list := make([]AuditEntry, len(entries))
	for i, e := range entries {
		list[i] = AuditEntry{ID: e.ID, Time: e.Time.Format(time.RFC3339Nano), Actor: e.Actor, Address: e.Addr,
			Action: e.Action, Target: e.Target, Detail: e.Detail}
		if list[i].Detail == nil {
			list[i].Detail = map[string]any{}
		}
	}
	return c.writeJSON(map[string]any{
		"search":  map[string]any{"hits": n, "page": q.Page, "limit": q.Limit, "count": len(list)},
		"entries": list,
	}, out{cache: cacheNone})
}

// usageMetrics are the metrics GET /usage serves.
var usageMetrics = map[string]bool{
	storage.MetricKeyRequests: true, storage.MetricRequests: true, storage.MetricUploads: true,
	storage.MetricUploadBytes: true, storage.MetricVariantHits: true, storage.MetricVariantMisses: true,
	storage.MetricRenderMicros: true, storage.MetricRenders: true, storage.MetricRateLimited: true,
}

// getUsage serves GET /usage (resource usage.get, in the built-in group
// all): the per-day counters of one metric over the last `days` days
// (default 30, at most 366), and for key.requests each key's creation and
// last use.
func (s *Server) getUsage(c *call) error {
	metric := c.query.Get("metric")
	if !usageMetrics[metric] {
		return errorf(http.StatusBadRequest, "Unknown metric '%s'", metric)
	}
	days, err := intParam(c.query, "days", 30, 1, 366)
	if err != nil {
		return err
	}
	since := s.now().UTC().AddDate(0, 0, 1-days).Format(time.DateOnly)
	rows, err := s.auditLog.UsageSince(c.ctx(), metric, since)
	if err != nil {
		return err
	}
	list := make([]UsageDay, len(rows))
	for i, r := range rows {
		list[i] = UsageDay{r.Day, r.Label, r.Value}
	}
	body := map[string]any{"metric": metric, "since": since, "days": list}
	if metric == storage.MetricKeyRequests {
		if body["keys"], err = s.keyTimes(c.ctx()); err != nil {
			return err
		}
	}
	return c.writeJSON(body, out{cache: cacheNone})
}

// keyTimes returns each stored key's creation time and last use.
func (s *Server) keyTimes(ctx context.Context) (map[string]map[string]string, error) {
	created, err := s.auditLog.KeysCreated(ctx)
	if err != nil {
		return nil, err
	}
	last, err := s.auditLog.UsageLast(ctx, storage.MetricKeyRequests)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	put := func(pk, field string, t time.Time) {
		if out[pk] == nil {
			out[pk] = map[string]string{}
		}
		out[pk][field] = t.Format(time.RFC3339)
	}
	for pk, t := range created {
		put(pk, "created", t)
	}
	for pk, t := range last {
		put(pk, "lastUsed", t)
	}
	return out, nil
}

// intParam reads an integer query parameter within [min, max].
func intParam(q map[string][]string, name string, def, min, max int) (int, error) {
	v := ""
	if vs := q[name]; len(vs) > 0 {
		v = vs[0]
	}
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, errorf(http.StatusBadRequest, "Invalid '%s': want a whole number from %d to %d", name, min, max)
	}
	return n, nil
}

// timeParam reads a time as RFC 3339 or a date; a date read as an end
// (until) means the end of that day.
func timeParam(v, name string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, errorf(http.StatusBadRequest, "Invalid '%s': want a date (YYYY-MM-DD) or an RFC 3339 time", name)
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

var _ auditStore = (*storage.DB)(nil)
