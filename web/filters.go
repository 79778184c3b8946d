package web

import "net/http"

// filtersView lists the loaded WebAssembly filters.
type filtersView struct {
	Page    pageView
	Filters []transformation
}

// filters lists the WASM transformations the engine has loaded, as
// GET /transformations describes them.
func (u *UI) filters(q *request) error {
	v := filtersView{Page: q.page("Filters", "filters")}
	var list transformationList
	if err := q.api.getJSON(q.r.Context(), "/transformations", nil, &list); err != nil {
		return err
	}
	for _, t := range list.Transformations {
		if t.Kind == "wasm" {
			v.Filters = append(v.Filters, t)
		}
	}
	return q.render(http.StatusOK, filtersPage(v))
}
