package web

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"github.com/vitrine/vitrine/api"
)

// filterView is one filter as the page shows it.
type filterView struct {
	Name, Version, Kind, Description, Hash, Error, Manifest string
	// Loading says the folder's current files are still loading (an older
	// version, when Loaded, serves meanwhile).
	Loaded, Loading bool
	Stats           []kv
	Counters        []kv
}

// filtersView lists the WebAssembly filters and offers a reload.
type filtersView struct {
	Page    pageView
	Action  string
	Filters []filterView
	// CanReload is set when the key may reload the filters.
	CanReload bool
}

// filters shows GET /filters: each filter folder's manifest, content hash,
// counters and load error.
func (u *UI) filters(q *request) error {
	v := filtersView{Page: q.page("Filters", "filters"), Action: q.path("/filters/reload"), CanReload: q.mayAny("filters.post")}
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
	if q.r.URL.Query().Get("done") == "reloaded" {
		v.Page.Notice = "Filters reloaded: " + strconv.Itoa(len(v.Filters)) + " folder(s) read."
	}
	return q.render(http.StatusOK, filtersPage(v))
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
		fv := filterView{Name: f.Name, Loaded: f.Loaded, Loading: f.State == "loading", Hash: f.ContentHash, Error: f.Error}
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
