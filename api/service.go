package api

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// Index links, served by GET /.
const (
	siteURL   = "https://github.com/vitrine/vitrine"
	sourceURL = "https://github.com/vitrine/vitrine"
	issuesURL = "https://github.com/vitrine/vitrine/issues"
	docsURL   = "https://github.com/vitrine/vitrine#readme"
)

func (s *Server) getIndex(c *call) error {
	if s.cfg.IndexRedirect != "" {
		c.w.Header().Set("Location", s.cfg.IndexRedirect)
		c.w.Header().Set("Cache-Control", cacheNone)
		c.w.WriteHeader(http.StatusTemporaryRedirect)
		return nil
	}
	return c.writeJSON(map[string]string{"site": siteURL, "source": sourceURL, "issues": issuesURL, "docs": docsURL},
		out{cache: cacheNone})
}

func (s *Server) getStatus(c *call) error {
	dbOK, storageOK := s.checkBackends(c.ctx())
	now := httpDate(s.now())
	status := http.StatusOK
	if !dbOK || !storageOK {
		status = http.StatusServiceUnavailable
	}
	body := map[string]any{"timestamp": now, "date": now, "database": dbOK, "storage": storageOK,
		"uploadFormats": s.engine.Config().Uploads.Formats}
	// Why a sink that fails leaves the status 200: a broker or a cache
	// that is down holds back its own deliveries, not this instance's
	// answers, and a load balancer must not take the instance out for it.
	if s.sinks != nil && dbOK {
		if sinks, err := s.sinks.Sinks(c.ctx()); err == nil {
			// /status is public: the last errors and answers (addresses,
			// a purger's body) only for a caller with an access token.
			if c.publicKey == "" || s.checkAccessToken(c.ctx(), c) != nil {
				for i := range sinks {
					sinks[i].LastError, sinks[i].LastResponse = "", ""
				}
			}
			body["sinks"] = sinks
		} else {
			s.log.Warn("status: sinks", "err", err)
		}
	}
	return c.writeJSON(body, out{status: status, cache: cacheNone})
}

func (s *Server) getStats(c *call) error {
	if !s.statsAllow.contains(c.clientIP()) {
		return errorf(http.StatusForbidden, "Access denied")
	}
	stats, err := s.stats.UserStats(c.ctx())
	if err != nil {
		return err
	}
	users := map[string]any{}
	var images, bytes int64
	for _, u := range stats {
		users[u.User] = map[string]int64{"numImages": u.NumImages, "numBytes": u.NumBytes}
		images += u.NumImages
		bytes += u.NumBytes
	}
	return c.writeJSON(map[string]any{
		"users":     users,
		"total":     map[string]int64{"numImages": images, "numUsers": int64(len(stats)), "numBytes": bytes},
		"custom":    c.custom,
		"numImages": images, "numUsers": len(stats), "numBytes": bytes,
	}, out{cache: cacheNone})
}

// countImages returns how many images user has, or 404 User not found for
// an unknown user: one without images and without a key of its name.
func (s *Server) countImages(ctx context.Context, user string) (int, error) {
	page, err := s.listing.Images(ctx, storage.Query{Users: []string{user}, Limit: 1})
	if err != nil || page.Hits > 0 {
		return page.Hits, err
	}
	if _, _, ok, err := s.acl.key(ctx, user); err != nil {
		return 0, err
	} else if !ok {
		return 0, errorf(http.StatusNotFound, "User not found")
	}
	return 0, nil
}

func (s *Server) getUser(c *call) error {
	user := c.params["user"]
	n, err := s.countImages(c.ctx(), user)
	if err != nil {
		return err
	}
	last, err := s.lastModified(c.ctx(), []string{user})
	if err != nil {
		return err
	}
	v := User{User: user, NumImages: n, LastModified: httpDate(last)}
	if err := s.userQuota(c.ctx(), &v); err != nil {
		return err
	}
	return c.writeJSON(v, out{cache: cacheJSON, etag: true, lastModified: last})
}

// lastModified is the latest change among the users' images, or now.
func (s *Server) lastModified(ctx context.Context, users []string) (time.Time, error) {
	t, err := s.listing.LastModified(ctx, users)
	if err != nil {
		return time.Time{}, err
	}
	if t.IsZero() {
		return s.now(), nil
	}
	return t, nil
}

// allGroups merges built-in, configured and database groups by name.
func (s *Server) allGroups(ctx context.Context) ([]Group, error) {
	byName := map[string]Group{}
	for n, r := range s.acl.groups {
		src := "config"
		if _, ok := builtinGroups[n]; ok {
			src = "builtin"
		}
		byName[n] = Group{Name: n, Resources: nonNil(r), Source: src}
	}
	dbGroups, _, err := s.groups.Groups(ctx, 1, 0)
	if err != nil {
		return nil, err
	}
	for _, g := range dbGroups {
		if _, ok := byName[g.Name]; !ok {
			byName[g.Name] = Group{Name: g.Name, Resources: nonNil(g.Resources), Source: "database", Mutable: s.acl.mutable}
		}
	}
	out := make([]Group, 0, len(byName))
	for _, g := range byName {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// nonNil is s, or an empty slice for nil, so it encodes as [] rather than
// null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) listGroups(c *call) error {
	page, limit, err := pageParams(c)
	if err != nil {
		return err
	}
	groups, err := s.allGroups(c.ctx())
	if err != nil {
		return err
	}
	hits := len(groups)
	start := min((page-1)*limit, hits)
	groups = groups[start:min(start+limit, hits)]
	return c.writeJSON(map[string]any{
		"search": map[string]int{"hits": hits, "page": page, "limit": limit, "count": len(groups)},
		"groups": groups,
		// As GET /keys: false when no group can change through the API.
		"mutable": s.acl.mutable,
	}, out{cache: cacheJSON})
}

func (s *Server) getGroup(c *call) error {
	res, ok, err := s.acl.group(c.ctx(), c.params["group"])
	if err != nil {
		return err
	}
	if !ok {
		return errorf(http.StatusNotFound, "Group not found")
	}
	v := Group{Name: c.params["group"], Resources: nonNil(res)}
	v.Source, v.Mutable = s.groupSource(v.Name)
	return c.writeJSON(v, out{cache: cacheJSON})
}

// groupSource says where the group name is defined (builtin, config or
// database) and whether it may change through the API.
func (s *Server) groupSource(name string) (string, bool) {
	if _, ok := builtinGroups[name]; ok {
		return "builtin", false
	}
	if _, ok := s.acl.groups[name]; ok {
		return "config", false
	}
	return "database", s.acl.mutable
}

// isNotExist reports a storage miss.
func isNotExist(err error) bool { return errors.Is(err, storage.ErrNotExist) }
