package web

import (
	"net/url"
	"sort"

	"github.com/vitrine/vitrine/api"
)

// overviewView is the dashboard.
type overviewView struct {
	Page            pageView
	Database        bool
	Storage         bool
	Native, Filters int
	FilterErrors    int
	StatsShown      bool
	StatsNote       string
	Users           int
	Images          int
	Bytes           string
	TopUsers        []userStat
	Latest          []thumbView
	LatestNote      string
	CanUpload       bool
	// Charts are the usage charts (usage.get), oldest day first.
	Charts []chartView
}

type userStat struct {
	User, Bytes string
	Images      int
	Href        string
}

// overview shows the service's health, its numbers and the latest uploads
// the key may see.
func (u *UI) overview(q *request) error {
	ctx := q.r.Context()
	v := overviewView{Page: q.page("Overview", "overview"), CanUpload: q.mayAny("images.post")}
	var status api.Status
	if r, err := q.api.do(ctx, "GET", "/status", nil, nil, ""); err == nil {
		// An unhealthy service answers 503 with the same document.
		if err := r.decode(&status); err != nil {
			return err
		}
	}
	v.Database, v.Storage = status.Database, status.Storage
	var tr api.TransformationList
	if err := q.api.getJSON(ctx, "/transformations", nil, &tr); err == nil {
		for _, t := range tr.Transformations {
			if t.Kind == "wasm" {
				v.Filters++
			} else {
				v.Native++
			}
		}
	}
	var fl api.FilterList
	if !q.mayAny("filters.get") {
		// The transformations list counts the loaded filters.
	} else if err := q.api.getJSON(ctx, "/filters", nil, &fl); err == nil {
		v.Filters = 0
		for _, f := range fl.Filters {
			if f.Loaded {
				v.Filters++
			}
			if f.Error != "" {
				v.FilterErrors++
			}
		}
	}
	var stats api.Stats
	bytesByUser := map[string]int64{}
	if err := q.api.getJSON(ctx, "/stats", nil, &stats); err == nil {
		v.StatsShown = true
		for name, s := range stats.Users {
			bytesByUser[name] = s.NumBytes
		}
		v.Users, v.Images, v.Bytes = int(stats.NumUsers), int(stats.NumImages), humanBytes(stats.NumBytes)
		for name, s := range stats.Users {
			v.TopUsers = append(v.TopUsers, userStat{User: name, Images: int(s.NumImages), Bytes: humanBytes(s.NumBytes),
				Href: q.path("/users/" + url.PathEscape(name))})
		}
		sort.Slice(v.TopUsers, func(i, j int) bool {
			a, b := v.TopUsers[i], v.TopUsers[j]
			return a.Images > b.Images || a.Images == b.Images && a.User < b.User
		})
		if len(v.TopUsers) > 8 {
			v.TopUsers = v.TopUsers[:8]
		}
	} else {
		v.StatsNote = "The service does not show statistics to your address (statsAllow in the configuration)."
	}
	l, err := q.list(ctx, "/images", url.Values{"limit": {"10"}, "sort[]": {"added:desc"}})
	if msg, denied := denial(err); denied {
		v.LatestNote = "Your key may not list images across users: " + msg
	} else if err != nil {
		return err
	}
	v.Latest = q.thumbs(l.Images)
	if v.Charts, err = q.overviewCharts(ctx, bytesByUser); err != nil {
		return err
	}
	return q.render(200, overviewPage(v))
}
