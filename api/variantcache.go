package api

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// variantCache is the shared variant cache as the API uses it;
// *storage.VariantCache satisfies it.
type variantCache interface {
	Get(ctx context.Context, img storage.Image, hash string) ([]byte, error)
	Put(ctx context.Context, img storage.Image, name storage.VariantName, data []byte) (stored bool, err error)
	Purge(ctx context.Context, user, id string) error
}

var _ variantCache = (*storage.VariantCache)(nil)

// variantHash names one variant of an image: the output format, the
// image's version (it changes with every metadata change, which smartSize
// and drawPois read) and the canonical chain. Why the version and not the
// Updated time: Updated has whole-second resolution, so two changes in one
// second would share a key and serve a stale variant.
func variantHash(img storage.Image, chain engine.Chain, format string) string {
	sum := md5.Sum(fmt.Appendf(nil, "%s|v%d|%s", format, img.Version, chain.Key()))
	return hex.EncodeToString(sum[:])
}

// purgeVariants drops an image's cached variants after a metadata change.
// Failure only costs space (the version in the key already keeps stale
// variants from being served), so it is logged.
func (s *Server) purgeVariants(ctx context.Context, user, id string) {
	if err := s.variants.Purge(ctx, user, id); err != nil {
		s.log.Error("purge variants", "user", user, "image", id, "err", err)
		return
	}
	s.collector.Wake()
}
