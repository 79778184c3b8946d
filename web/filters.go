package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

// filterView is one filter as the page shows it.
type filterView struct {
	Name, Version, Kind, Description, Hash, Error, Manifest string
	// Source is "dir" (a folder of filters.dir, read-only here) or "api";
	// Deployed the version of the latter, shortened.
	Source, Deployed string
	// Loading says the folder's current files are still loading (an older
	// version, when Loaded, serves meanwhile).
	Loaded, Loading bool
	Stats           []kv
	Counters        []kv
}

// filtersView lists the WebAssembly filters and offers a reload, an
// upload of a new version, and the deployed filters' versions to compare
// and roll back to.
type filtersView struct {
	Page    pageView
	Action  string
	Filters []filterView
	// CanReload is set when the key may reload the filters; CanDeploy
	// when it may push versions, CanRollback when it may roll back.
	CanReload, CanDeploy, CanRollback, CanPatch bool
	// DeployAction is the upload form's target; DeployError why the last
	// upload was refused.
	DeployAction, DeployError string
	// CompareAction is the compare forms' target (this page).
	CompareAction string
	Deployed      []deployedView
	Instances     []instanceView
}

// deployedView is one filter of the active set with its versions.
type deployedView struct {
	Name, Version, Canary string
	Enabled               bool
	Percent               int
	Versions              []versionView
	// RollbackAction, EnableAction and CanaryAction are the forms'
	// targets.
	RollbackAction, EnableAction, CanaryAction string
	// CompareA and CompareB are the versions the compare form offers
	// first (or the ones compared); Compared is set when the page shows
	// their differences, Differences those (none: the same manifest).
	CompareA, CompareB string
	Compared           bool
	Differences        []difference
}

// difference is one field in which two versions differ: a manifest field
// by its dotted path (params.dark.default), or the bundle's size, date or
// uploader; "-" where a version has no such field.
type difference struct{ Field, A, B string }

// versionView is one version, for comparing: its digest (short and
// full), size, date, uploader and the manifest's version.
type versionView struct {
	Short, Full, Size, Created, Actor, Label string
	Active, Canary, Previous                 bool
}

// instanceView is what one instance serves.
type instanceView struct {
	Name, Heartbeat string
	Filters         []kv
}

// runningValue is what an instance says of one filter: the version of its
// current files (or its source), their state there, and why they failed or
// are unavailable there.
func runningValue(f api.FilterRunning) string {
	val := f.Source + " " + f.State
	if v := cmp.Or(f.Target, f.Version); v != "" {
		val = short(v) + " " + f.State
	}
	if f.Error != "" && f.State != "ready" && f.State != "loading" {
		val += ": " + f.Error
	}
	return val
}

// filters shows GET /filters: each filter folder's manifest, content hash,
// counters and load error.
func (u *UI) filters(q *request) error {
	v := filtersView{Page: q.page("Filters", "filters"), Action: q.path("/filters/reload"), CanReload: q.mayAny("filters.post"),
		CanDeploy: q.mayAny("filters.put"), CanRollback: q.mayAny("filters.post"), CanPatch: q.mayAny("filters.patch"),
		DeployAction: q.path("/filters/deploy")}
	return u.renderFilters(q, v, http.StatusOK)
}

// renderFilters fills v from GET /filters and renders the page.
func (u *UI) renderFilters(q *request, v filtersView, status int) error {
	var list api.FilterList
	if err := q.api.getJSON(q.r.Context(), "/filters", nil, &list); err != nil {
		msg, denied := denial(err)
		if !denied {
			return err
		}
		v.Page.Denied = append(v.Page.Denied, "listing filters ("+msg+")")
		return q.render(http.StatusForbidden, filtersPage(v))
	}
	v.Filters = filterViews(list.Filters)
	v.CompareAction = q.path("/filters")
	for _, d := range list.Deployed {
		v.Deployed = append(v.Deployed, q.deployedView(d))
	}
	for _, in := range list.Instances {
		iv := instanceView{Name: in.Instance, Heartbeat: stampOf(in.Heartbeat)}
		for _, f := range in.Filters {
			iv.Filters = append(iv.Filters, kv{f.Name, runningValue(f)})
		}
		v.Instances = append(v.Instances, iv)
	}
	switch q.r.URL.Query().Get("done") {
	case "reloaded":
		v.Page.Notice = "Filters reloaded: " + strconv.Itoa(len(v.Filters)) + " folder(s) read."
	case "deployed":
		v.Page.Notice = "Version " + short(q.r.URL.Query().Get("version")) + " of " + q.r.URL.Query().Get("filter") +
			" uploaded; every instance loads it within filters.syncInterval."
	case "enabled", "disabled":
		v.Page.Notice = q.r.URL.Query().Get("filter") + " " + q.r.URL.Query().Get("done") + " on every instance."
	case "canary":
		v.Page.Notice = "The canary of " + q.r.URL.Query().Get("filter") + " changed."
	case "rolledback":
		v.Page.Notice = q.r.URL.Query().Get("filter") + " rolled back to " + short(q.r.URL.Query().Get("version")) + "."
	}
	return q.render(status, filtersPage(v))
}

// deployedView is d as the page shows it, newest version first.
func (q *request) deployedView(d api.DeployedFilter) deployedView {
	dv := deployedView{Name: d.Name, Version: short(d.Version), Canary: short(d.Canary), Enabled: d.Enabled, Percent: d.Percent,
		RollbackAction: q.path("/filters/" + url.PathEscape(d.Name) + "/rollback"),
		EnableAction:   q.path("/filters/" + url.PathEscape(d.Name) + "/enabled"),
		CanaryAction:   q.path("/filters/" + url.PathEscape(d.Name) + "/canary")}
	for _, ver := range d.Versions {
		dv.Versions = append(dv.Versions, versionView{Short: short(ver.Version), Full: ver.Version,
			Size: humanBytes(ver.Size), Created: stampOf(ver.Created), Actor: ver.Actor, Label: q.versionLabel(d.Name, ver),
			Active: ver.Version == d.Version, Canary: ver.Version == d.Canary, Previous: ver.Version == d.Previous})
	}
	// The compare form offers the active version against the one before
	// it (or the newest other), unless the page compares two already.
	dv.CompareA = d.Version
	for _, ver := range d.Versions {
		if ver.Version != d.Version && (dv.CompareB == "" || ver.Version == d.Previous) {
			dv.CompareB = ver.Version
		}
	}
	query := q.r.URL.Query()
	if query.Get("compare") == d.Name {
		a, aok := findVersion(d.Versions, query.Get("a"))
		b, bok := findVersion(d.Versions, query.Get("b"))
		if aok && bok {
			dv.CompareA, dv.CompareB, dv.Compared = a.Version, b.Version, true
			dv.Differences = differences(a, b)
		}
	}
	return dv
}

// versionLabel is the version that the manifest of ver, a version of the
// filter name, states; a manifest that cannot be read is logged and said.
func (q *request) versionLabel(name string, ver api.FilterVersion) string {
	var m struct{ Version string }
	if len(ver.Manifest) == 0 {
		return ""
	}
	if err := json.Unmarshal(ver.Manifest, &m); err != nil {
		q.ui.cfg.Logger.Error("web: a filter version's manifest could not be read", "filter", name, "version", ver.Version, "err", err)
		return "(manifest unreadable)"
	}
	return m.Version
}

// findVersion returns the version of vs whose digest is version.
func findVersion(vs []api.FilterVersion, version string) (api.FilterVersion, bool) {
	for _, v := range vs {
		if v.Version == version {
			return v, true
		}
	}
	return api.FilterVersion{}, false
}

// differences lists the fields in which versions a and b differ: every
// manifest field by its dotted path, then the bundle's size, date and
// uploader, in that order.
func differences(a, b api.FilterVersion) []difference {
	fa, fb := map[string]string{}, map[string]string{}
	flattenJSON("", a.Manifest, fa)
	flattenJSON("", b.Manifest, fb)
	fields := make([]string, 0, len(fa)+len(fb))
	for k := range fa {
		fields = append(fields, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			fields = append(fields, k)
		}
	}
	sort.Strings(fields)
	var out []difference
	orDash := func(m map[string]string, k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return "-"
	}
	for _, k := range fields {
		if a, b := orDash(fa, k), orDash(fb, k); a != b {
			out = append(out, difference{k, a, b})
		}
	}
	for _, d := range []difference{{"bundle size", humanBytes(a.Size), humanBytes(b.Size)},
		{"uploaded", stampOf(a.Created), stampOf(b.Created)}, {"uploaded by", a.Actor, b.Actor}} {
		if d.A != d.B {
			out = append(out, d)
		}
	}
	return out
}

// flattenJSON adds each leaf of the JSON document raw to out under its
// dotted path below prefix (arrays by index: events.0), as compact JSON.
func flattenJSON(prefix string, raw json.RawMessage, out map[string]string) {
	var obj map[string]json.RawMessage
	var arr []json.RawMessage
	switch {
	case json.Unmarshal(raw, &obj) == nil && obj != nil:
		for k, v := range obj {
			flattenJSON(joinPath(prefix, k), v, out)
		}
	case json.Unmarshal(raw, &arr) == nil && arr != nil:
		for i, v := range arr {
			flattenJSON(joinPath(prefix, strconv.Itoa(i)), v, out)
		}
	default:
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			buf.Reset()
			buf.Write(raw)
		}
		out[prefix] = buf.String()
	}
}

// joinPath is prefix.key, or key at the top.
func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// deployFilter uploads a new version: the form's filter.json and
// filter.wasm go to PUT /filters/<name> as multipart/form-data. A refused
// version (one that does not compile) shows the API's reason on the page.
func (u *UI) deployFilter(q *request) error {
	if err := q.r.ParseMultipartForm(64 << 20); err != nil {
		return &apiError{Status: http.StatusBadRequest, Message: "The upload could not be read: " + err.Error()}
	}
	v := filtersView{Page: q.page("Filters", "filters"), Action: q.path("/filters/reload"), CanReload: q.mayAny("filters.post"),
		CanDeploy: q.mayAny("filters.put"), CanRollback: q.mayAny("filters.post"), CanPatch: q.mayAny("filters.patch"),
		DeployAction: q.path("/filters/deploy")}
	manifest, merr := formFile(q.r, "manifest")
	wasm, werr := formFile(q.r, "module")
	if merr != nil || werr != nil {
		v.DeployError = "Choose a filter.json and a filter.wasm."
		return u.renderFilters(q, v, http.StatusBadRequest)
	}
	name := strings.TrimSpace(q.r.FormValue("name"))
	if name == "" {
		var m struct{ Name string }
		if err := json.Unmarshal(manifest, &m); err != nil {
			v.DeployError = "The filter.json could not be read (" + err.Error() + "): correct it, or give a name."
			return u.renderFilters(q, v, http.StatusBadRequest)
		}
		name = m.Name
	}
	if name == "" {
		v.DeployError = "The manifest names no filter: give a name."
		return u.renderFilters(q, v, http.StatusBadRequest)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct {
		field string
		data  []byte
	}{{"manifest", manifest}, {"module", wasm}} {
		w, _ := mw.CreateFormFile(part.field, part.field) // writing to a bytes.Buffer cannot fail
		_, _ = w.Write(part.data)
	}
	_ = mw.Close()
	path := "/filters/" + url.PathEscape(name)
	if q.r.FormValue("activate") != "on" {
		path += "?activate=false"
	}
	r, err := q.api.send(q.r.Context(), http.MethodPut, path, body.Bytes(), mw.FormDataContentType())
	if err != nil {
		msg, status, err := refusal(err)
		if err != nil {
			return err
		}
		v.DeployError = msg
		return u.renderFilters(q, v, status)
	}
	var d api.DeployedFilter
	if err := r.decode(&d); err != nil {
		return err
	}
	version := d.Version
	if len(d.Versions) > 0 && q.r.FormValue("activate") != "on" {
		version = d.Versions[0].Version
	}
	return q.redirect("/filters?" + url.Values{"done": {"deployed"}, "filter": {name}, "version": {version}}.Encode())
}

// rollbackFilter makes the posted version the active one.
func (u *UI) rollbackFilter(q *request) error {
	name := q.r.PathValue("name")
	version := q.r.FormValue("version")
	body, _ := json.Marshal(map[string]string{"version": version})
	if _, err := q.api.send(q.r.Context(), http.MethodPost, "/filters/"+url.PathEscape(name)+"/rollback", body, ""); err != nil {
		return err
	}
	return q.redirect("/filters?" + url.Values{"done": {"rolledback"}, "filter": {name}, "version": {version}}.Encode())
}

// enableFilter switches a deployed filter on or off on every instance.
func (u *UI) enableFilter(q *request) error {
	name := q.r.PathValue("name")
	on := q.r.FormValue("enabled") == "true"
	body, _ := json.Marshal(map[string]bool{"enabled": on})
	if _, err := q.api.send(q.r.Context(), http.MethodPatch, "/filters/"+url.PathEscape(name), body, ""); err != nil {
		return err
	}
	done := "disabled"
	if on {
		done = "enabled"
	}
	return q.redirect("/filters?" + url.Values{"done": {done}, "filter": {name}}.Encode())
}

// canaryFilter serves a version to a percentage of images, or ends the
// canary (no version).
func (u *UI) canaryFilter(q *request) error {
	name := q.r.PathValue("name")
	doc := map[string]any{"canary": q.r.FormValue("version")}
	if q.r.FormValue("version") != "" {
		p, err := strconv.Atoi(q.r.FormValue("percent"))
		if err != nil {
			return &apiError{Status: http.StatusBadRequest, Message: "The percentage is a whole number from 0 to 100."}
		}
		doc["percent"] = p
	}
	body, _ := json.Marshal(doc)
	if _, err := q.api.send(q.r.Context(), http.MethodPatch, "/filters/"+url.PathEscape(name), body, ""); err != nil {
		return err
	}
	return q.redirect("/filters?" + url.Values{"done": {"canary"}, "filter": {name}}.Encode())
}

// formFile reads the posted file of field.
func formFile(r *http.Request, field string) ([]byte, error) {
	if r.MultipartForm == nil || len(r.MultipartForm.File[field]) == 0 {
		return nil, errors.New("no file")
	}
	return readPart(r.MultipartForm.File[field][0])
}

// short is the first 12 digits of a version.
func short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// stampOf is an RFC 3339 time as YYYY-MM-DD HH:MM:SS UTC.
func stampOf(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// reloadFilters asks the API to reload the filters directory; the filters
// page then shows the result.
func (u *UI) reloadFilters(q *request) error {
	if _, err := q.api.send(q.r.Context(), http.MethodPost, "/filters/reload", nil, ""); err != nil {
		return err
	}
	return q.redirect("/filters?done=reloaded")
}

func filterViews(list []api.FilterStatus) []filterView {
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	out := make([]filterView, 0, len(list))
	for _, f := range list {
		fv := filterView{Name: f.Name, Loaded: f.Loaded, Loading: f.State == "loading", Hash: f.ContentHash, Error: f.Error,
			Source: f.Source, Deployed: short(f.Version)}
		var m struct {
			Version, Kind, Description string
		}
		if len(f.Manifest) > 0 && json.Unmarshal(f.Manifest, &m) == nil {
			fv.Version, fv.Kind, fv.Description = m.Version, m.Kind, m.Description
			fv.Manifest, _ = prettyJSON(f.Manifest)
		}
		if s := f.Stats; s != nil {
			fv.Stats = []kv{{"Calls", itoa64(s.Calls)}, {"Errors", itoa64(s.Errors)}, {"Timeouts", itoa64(s.Timeouts)},
				{"Rejections", itoa64(s.Rejections)}, {"p50", strconv.FormatFloat(s.P50Ms, 'f', 1, 64) + " ms"},
				{"p99", strconv.FormatFloat(s.P99Ms, 'f', 1, 64) + " ms"}, {"Busy", itoa64(s.Busy)},
				{"Instances", itoa(s.Instances)}, {"Waiting", itoa(s.Waiting)}}
		}
		for k, n := range f.Counters {
			fv.Counters = append(fv.Counters, kv{k, itoa64(n)})
		}
		sort.Slice(fv.Counters, func(i, j int) bool { return fv.Counters[i].Key < fv.Counters[j].Key })
		out = append(out, fv)
	}
	return out
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
