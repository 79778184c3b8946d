package api

import "net/http"

// listVariants serves GET /users/<user>/images/<image>/variants: the
// image's cached transformed variants, most recently used first, each
// with its hash (of chain and format), the canonical chain (steps joined
// by "|") and the format (empty for variants cached before they were
// recorded), size in bytes, and when it was stored and last served (last use is recorded in batches, so it may lag
// by the cache's flush interval); 404 when the image does not exist.
func (s *Server) listVariants(c *call) error {
	user, image := c.params["user"], c.params["image"]
	if _, err := s.images.Image(c.ctx(), user, image); isNotExist(err) {
		return errorf(http.StatusNotFound, "Image does not exist")
	} else if err != nil {
		return err
	}
	list, err := s.variantRows.Variants(c.ctx(), user, image)
	if err != nil {
		return err
	}
	views := make([]map[string]any, len(list))
	for i, v := range list {
		views[i] = map[string]any{"hash": v.Hash, "chain": v.Chain, "format": v.Format, "size": v.Size, "created": httpDate(v.Created), "lastUsed": httpDate(v.LastUsed)}
	}
	return c.writeJSON(map[string]any{"variants": views}, out{})
}
