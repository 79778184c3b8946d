package api

import (
	"context"
	"log/slog"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// imageQualities is the engine.QualityStore of one image: the auto-quality
// answers the image store keeps for it (its qualityStore ability), which a
// render reads and adds to, so that later renders of the image at a similar
// size cost one encode. A failure is logged and costs only a search: after
// a failed read the render searches afresh; a failed write (the image went
// meanwhile, which is not logged) leaves the next render to search again.
type imageQualities struct {
	store qualityStore
	img   storage.Image
	log   *slog.Logger
}

// qualitiesOf is the engine.QualityStore of img, nil when the image store
// keeps no answers.
func (s *Server) qualitiesOf(img storage.Image) engine.QualityStore {
	qs, ok := s.images.(qualityStore)
	if !ok {
		return nil
	}
	return imageQualities{store: qs, img: img, log: s.log}
}

// Qualities returns the answers stored for the image.
func (q imageQualities) Qualities(ctx context.Context) []engine.QualityAnswer {
	rows, err := q.store.Qualities(ctx, q.img.User, q.img.Identifier)
	if err != nil {
		q.log.Warn("stored qualities", "user", q.img.User, "image", q.img.Identifier, "err", err)
		return nil
	}
	out := make([]engine.QualityAnswer, len(rows))
	for i, r := range rows {
		out[i] = engine.QualityAnswer(r)
	}
	return out
}

// SetQuality stores the answer a render's search found.
func (q imageQualities) SetQuality(ctx context.Context, a engine.QualityAnswer) {
	if err := q.store.SetQuality(ctx, q.img.User, q.img.Identifier, storage.QualityAnswer(a)); err != nil && !isNotExist(err) {
		q.log.Warn("store quality", "user", q.img.User, "image", q.img.Identifier, "err", err)
	}
}

var _ engine.QualityStore = imageQualities{}
