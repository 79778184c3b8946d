package api

import (
	"context"
	"net/http"
)

// FilterAdmin is what the filters resources need from the WebAssembly host;
// package main (filters.go) adapts package filters to it.
type FilterAdmin interface {
	// Filters lists every filter folder: state (loading, ready, failed),
	// manifest, content hash, load error, counters.
	Filters() []FilterStatus
	// ReloadFilters loads changed, added and removed filters and returns
	// the new list; a filter whose load outlasts the wait is listed as
	// loading.
	ReloadFilters(ctx context.Context) ([]FilterStatus, error)
}

// listFilters serves GET /filters.
func (s *Server) listFilters(c *call) error {
	list := []FilterStatus{}
	if s.filters != nil {
		list = s.filters.Filters()
	}
	res := FilterList{Filters: nonNil(list), Deployed: []DeployedFilter{}, Instances: []FilterInstance{}}
	if s.deploys != nil {
		var err error
		if res.Deployed, err = s.deployedFilters(c.ctx()); err != nil {
			return err
		}
		if res.Instances, err = s.filterInstances(c.ctx()); err != nil {
			return err
		}
	}
	return c.writeJSON(res, out{cache: cacheNone})
}

// reloadFilters serves POST /filters/reload: a filter refused by the reload
// is listed with its error (its old version, if any, keeps serving), one
// still loading with its state; only an unreadable filters directory fails
// the request.
func (s *Server) reloadFilters(c *call) error {
	list := []FilterStatus{}
	if s.filters != nil {
		var err error
		// Why without cancel: a client that goes away must not abort
		// compiling the filters half-way; the reload finishes for everyone.
		if list, err = s.filters.ReloadFilters(context.WithoutCancel(c.ctx())); err != nil {
			return &Error{Status: http.StatusInternalServerError, Msg: "Filter reload failed", err: err}
		}
		if err := s.auditLog.RecordAudit(context.WithoutCancel(c.ctx()), "filters.reload", "filters", nil); err != nil {
			return err
		}
	}
	return c.writeJSON(FilterList{Filters: nonNil(list), Deployed: []DeployedFilter{}, Instances: []FilterInstance{}}, out{cache: cacheNone})
}
