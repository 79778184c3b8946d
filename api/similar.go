package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

// defaultMaxDistance is maxDistance when similarTo comes alone: about the
// distance that separates a resized, recompressed copy from its original
// with room to spare, well short of unrelated pictures (engine/README.md, Image analysis).
const defaultMaxDistance = 10

// similarQuery reads similarTo and maxDistance into q, whose Users are
// set. similarTo names an image of the listed user (`<id>`) or, on
// /images, `<user>/<id>` of a user the key may read; the reference itself
// is left out of the answer.
func (s *Server) similarQuery(ctx context.Context, c *call, q *storage.Query) error {
	ref, dist := c.query.Get("similarTo"), c.query.Get("maxDistance")
	if ref == "" {
		if dist != "" || c.query.Has("similarTo") {
			return errorf(http.StatusBadRequest, "maxDistance needs similarTo, the identifier of an image")
		}
		return nil
	}
	max := defaultMaxDistance
	if dist != "" {
		n, err := strconv.Atoi(dist)
		if err != nil || n < 0 || n > 64 {
			return errorf(http.StatusBadRequest, "maxDistance must be an integer from 0 to 64")
		}
		max = n
	}
	if len(q.Sort) > 0 {
		return errorf(http.StatusBadRequest, "sort cannot be combined with similarTo: similar images come nearest first")
	}
	user, id, ok := strings.Cut(ref, "/")
	switch {
	case !ok && len(q.Users) == 1:
		user, id = q.Users[0], ref
	case !ok:
		return errorf(http.StatusBadRequest, "similarTo must be <user>/<imageIdentifier> when several users are listed")
	case !slices.Contains(q.Users, user):
		return errorf(http.StatusBadRequest, "similarTo names an image of a user not listed: %s", user)
	}
	props, ok := s.listing.(propertiesReader)
	if !ok {
		return errorf(http.StatusBadRequest, "similarTo is not available on this storage")
	}
	p, err := props.Properties(ctx, user, id)
	if isNotExist(err) {
		if _, err := s.images.Image(ctx, user, id); isNotExist(err) {
			return errorf(http.StatusBadRequest, "similarTo: image %s of user %s not found", id, user)
		}
		return errorf(http.StatusBadRequest, "similarTo: image %s has not been analysed yet (vitrine analyze)", id)
	}
	if err != nil {
		return err
	}
	if !p.HasPHash {
		return errorf(http.StatusBadRequest, "similarTo: image %s has no perceptual hash (analysis.perceptualHash is off)", id)
	}
	q.Similar = &storage.Similarity{Hash: p.PHash, MaxDistance: max, Exclude: storage.ImageRef{User: user, Identifier: id}}
	return nil
}

// propertiesReader reads an image's analysed properties.
type propertiesReader interface {
	Properties(ctx context.Context, user, id string) (storage.Properties, error)
}

// wantsProperties reports whether a listing shows any property field.
func wantsProperties(fields []string) bool {
	if len(fields) == 0 {
		return true
	}
	for _, f := range fields {
		if slices.Contains(propertyFields, f) {
			return true
		}
	}
	return false
}
