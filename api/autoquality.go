package api

import (
	"context"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// storedQualities returns the auto-quality answers stored for img when the
// chain asks for auto quality and the store keeps them; a failed read is
// logged and the render searches afresh.
func (s *Server) storedQualities(ctx context.Context, img storage.Image, chain engine.Chain) []engine.QualityAnswer {
	qs, ok := s.images.(qualityStore)
	if !ok || !chain.WantsQuality() {
		return nil
	}
	rows, err := qs.Qualities(ctx, img.User, img.Identifier)
	if err != nil {
		s.log.Warn("stored qualities", "user", img.User, "image", img.Identifier, "err", err)
		return nil
	}
	out := make([]engine.QualityAnswer, len(rows))
	for i, r := range rows {
		out[i] = engine.QualityAnswer(r)
	}
	return out
}

// storeQuality keeps the answer a render's search found, so later renders
// of the image at a similar size cost one encode. A failure (the image went
// meanwhile) is logged: the next render searches again.
func (s *Server) storeQuality(ctx context.Context, img storage.Image, a *engine.QualityAnswer) {
	qs, ok := s.images.(qualityStore)
	if !ok || a == nil {
		return
	}
	if err := qs.SetQuality(ctx, img.User, img.Identifier, storage.QualityAnswer(*a)); err != nil && !isNotExist(err) {
		s.log.Warn("store quality", "user", img.User, "image", img.Identifier, "err", err)
	}
}
