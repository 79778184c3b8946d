package engine

import "context"

// QualityStore keeps one image's auto-quality answers between renders
// (Request.Qualities), so that a render at a size class and target seen
// before costs one encode instead of a search. Engine uses it only for a
// render that asks for auto quality: Qualities once, before the render
// waits for a pipeline slot; SetQuality for each answer the render's
// search found, once the slot is given back.
//
// Why no errors: as with http.CookieJar, a failure costs no more than a
// search, so it never fails a render, and the store, which knows the image,
// is the one to report it.
type QualityStore interface {
	// Qualities returns the answers stored for the image: none when it has
	// none or they cannot be read, and the render searches afresh.
	Qualities(ctx context.Context) []QualityAnswer
	// SetQuality stores a for the image, in place of the answer for the
	// same format and size class; when that fails, a later render searches
	// again.
	SetQuality(ctx context.Context, a QualityAnswer)
}

// storedQualities reads the answers stored for req's image when req asks
// for auto quality (compress:level=auto in its chain, or
// Request.AutoQuality) and has a store.
func storedQualities(ctx context.Context, req Request) []QualityAnswer {
	if req.Qualities == nil || (!req.Chain.WantsQuality() && req.AutoQuality == nil) {
		return nil
	}
	return req.Qualities.Qualities(ctx)
}

// keepQualities stores the answers res's searches found in qs (nil: none
// kept): the chosen format's, then the other candidates' of a best-format
// render.
func keepQualities(ctx context.Context, qs QualityStore, res *Result) {
	if qs == nil {
		return
	}
	if res.Quality != nil {
		qs.SetQuality(ctx, *res.Quality)
	}
	for _, a := range res.Searched {
		qs.SetQuality(ctx, a)
	}
}
