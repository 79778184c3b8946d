package api

import (
	"context"
	"slices"
	"sort"

	"github.com/vitrine/vitrine/storage"
)

// keyLister lists the stored public keys.
type keyLister interface {
	KeyNames(ctx context.Context) ([]string, error)
}

// listKeys serves GET /keys (resource keys.get, in the built-in group
// all): every public key, configured ones first, with where it is defined
// and whether the API may change it, and whether keys may be created
// through the API at all (top-level mutable, accessControl.database).
// Private keys are never listed.
func (s *Server) listKeys(c *call) error {
	list := []KeyEntry{}
	configured := make([]string, 0, len(s.acl.keys))
	for pk := range s.acl.keys {
		configured = append(configured, pk)
	}
	sort.Strings(configured)
	for _, pk := range configured {
		list = append(list, KeyEntry{PublicKey: pk, Source: "config"})
	}
	names, err := s.keyNames.KeyNames(c.ctx())
	if err != nil {
		return err
	}
	for _, pk := range names {
		if !slices.Contains(configured, pk) {
			list = append(list, KeyEntry{PublicKey: pk, Source: "database", Mutable: s.acl.mutable})
		}
	}
	return c.writeJSON(map[string]any{"keys": list, "mutable": s.acl.mutable}, out{cache: cacheNone})
}

var _ keyLister = (*storage.DB)(nil)
