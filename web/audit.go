package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

// auditView is the audit log page: filters, one page of entries, pager.
type auditView struct {
	Page pageView
	// The filters as typed, sent back to the API as they are.
	Actor, Action, User, Since, Until string
	Actions                           []string
	Entries                           []auditRow
	Hits, PageNo, Pages               int
	PrevHref, NextHref, Action0       string
	// Error is the API's refusal of a filter (a malformed date).
	Error string
}

// auditRow is one entry as shown.
type auditRow struct {
	Time, Actor, Address, Action, Target, Detail string
	// TargetHref links an image target to its page.
	TargetHref string
}

// auditActions are the actions the filter offers (what storage records);
// a trailing "." selects every action on that kind of thing.
var auditActions = []string{
	"image.", "image.create", "image.delete", "metadata.", "shorturl.", "key.", "key.create", "key.update",
	"key.delete", "rule.", "group.", "filters.", "filters.reload", "filters.put", "filters.rollback", "webhook.", "blocklist.",
}

const auditPageSize = 50

// audit shows GET /audit: who changed what, when and from where.
func (u *UI) audit(q *request) error {
	in := q.r.URL.Query()
	v := auditView{Page: q.page("Audit log", "audit"), Actor: in.Get("actor"), Action: in.Get("action"),
		User: in.Get("user"), Since: in.Get("since"), Until: in.Get("until"), Actions: auditActions,
		Action0: q.path("/audit")}
	v.PageNo, _ = strconv.Atoi(in.Get("page"))
	if v.PageNo < 1 {
		v.PageNo = 1
	}
	args := url.Values{"page": {strconv.Itoa(v.PageNo)}, "limit": {strconv.Itoa(auditPageSize)}}
	for k, val := range map[string]string{"actor": v.Actor, "action": v.Action, "user": v.User, "since": v.Since, "until": v.Until} {
		if val = strings.TrimSpace(val); val != "" {
			args.Set(k, val)
		}
	}
	var res api.AuditList
	if err := q.api.getJSON(q.r.Context(), "/audit", args, &res); err != nil {
		msg, denied := denial(err)
		if denied {
			v.Page.Denied = append(v.Page.Denied, "reading the audit log ("+msg+")")
			return q.render(http.StatusForbidden, auditPage(v))
		}
		if ae, ok := err.(*apiError); ok && ae.Status == http.StatusBadRequest {
			v.Error = ae.Message
			return q.render(http.StatusBadRequest, auditPage(v))
		}
		return err
	}
	v.Hits = res.Search.Hits
	v.Pages = (v.Hits + auditPageSize - 1) / auditPageSize
	for _, e := range res.Entries {
		row := auditRow{Actor: e.Actor, Address: e.Address, Action: e.Action, Target: e.Target, Detail: detailText(e.Detail)}
		if t, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
			row.Time = t.UTC().Format("2006-01-02 15:04:05")
		}
		if strings.HasPrefix(e.Action, "image.create") || strings.HasPrefix(e.Action, "metadata.") || strings.HasPrefix(e.Action, "shorturl.") {
			if user, id, ok := strings.Cut(e.Target, "/"); ok {
				row.TargetHref = q.path("/users/" + url.PathEscape(user) + "/images/" + url.PathEscape(id))
			}
		}
		if strings.HasPrefix(e.Action, "webhook.") && e.Action != "webhook.delete" {
			row.TargetHref = q.path("/webhooks/" + url.PathEscape(e.Target))
		}
		if e.Action == "blocklist.add" {
			row.TargetHref = q.path("/blocklist/" + url.PathEscape(e.Target))
		}
		v.Entries = append(v.Entries, row)
	}
	link := func(n int) string {
		a := url.Values{}
		for k, val := range args {
			if k != "limit" {
				a[k] = val
			}
		}
		a.Set("page", strconv.Itoa(n))
		return q.path("/audit") + "?" + a.Encode()
	}
	if v.PageNo > 1 {
		v.PrevHref = link(min(v.PageNo-1, max(v.Pages, 1)))
	}
	if v.PageNo < v.Pages {
		v.NextHref = link(v.PageNo + 1)
	}
	return q.render(http.StatusOK, auditPage(v))
}

// detailText writes an entry's detail as "key: value" pairs.
func detailText(d map[string]any) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		b, _ := json.Marshal(d[k])
		parts = append(parts, k+": "+string(b))
	}
	return strings.Join(parts, ", ")
}
