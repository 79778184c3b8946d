package api

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

const shortIDAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newShortID draws 7 characters uniformly from [a-zA-Z0-9].
func newShortID() string {
	out := make([]byte, 0, 7)
	var buf [16]byte
	for len(out) < 7 {
		_, _ = rand.Read(buf[:]) // never fails (crypto/rand)
		for _, b := range buf {
			// 248 = 4*62: rejecting the rest keeps the draw uniform.
			if b < 248 && len(out) < 7 {
				out = append(out, shortIDAlphabet[b%62])
			}
		}
	}
	return string(out)
}

// shortURLRequest is the body of POST .../shorturls.
type shortURLRequest struct {
	User            *string `json:"user"`
	ImageIdentifier *string `json:"imageIdentifier"`
	Extension       *string `json:"extension"`
	Query           *string `json:"query"`
}

// canonicalQuery keeps the transformations of a short URL's query in a
// stable encoded form (`t[]=a&t[]=b`); other parameters carry no meaning.
func canonicalQuery(raw string) (string, []string, error) {
	raw = strings.TrimPrefix(raw, "?")
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", nil, errorf(http.StatusBadRequest, "Invalid query: %v", err)
	}
	ts, err := transformations(q)
	if err != nil {
		return "", nil, err
	}
	return storage.ShortURLQuery(ts), ts, nil
}

// bodyNames checks that the body's field (user, imageIdentifier) repeats
// the path's value, and says what is wrong when it does not. The messages
// start as Imbo's do ("Missing or invalid user").
func bodyNames(field string, got *string, path string) error {
	what := map[string]string{"user": "user", "imageIdentifier": "image identifier"}[field]
	switch {
	case got == nil:
		return errorf(http.StatusBadRequest, "Missing or invalid %s: the body has no %s; it must be %s, as in the path",
			what, field, path)
	case *got != path:
		return errorf(http.StatusBadRequest, "Missing or invalid %s: the body's %s is '%s', the path's is '%s'; they must be equal",
			what, field, *got, path)
	}
	return nil
}

func (s *Server) postShortURL(c *call) error {
	var req shortURLRequest
	if err := c.readJSON(64<<10, &req); err != nil {
		return err
	}
	user, image := c.params["user"], c.params["image"]
	if err := bodyNames("user", req.User, user); err != nil {
		return err
	}
	if err := bodyNames("imageIdentifier", req.ImageIdentifier, image); err != nil {
		return err
	}
	ext := ""
	if req.Extension != nil {
		ext = strings.ToLower(*req.Extension)
		if ext == "jpeg" {
			ext = "jpg"
		}
		if _, ok := imageFormats[ext]; !ok && ext != "" {
			return errorf(http.StatusBadRequest, "Extension provided is not a recognized format")
		}
	}
	query := ""
	if req.Query != nil {
		var ts []string
		var err error
		if query, ts, err = canonicalQuery(*req.Query); err != nil {
			return err
		}
		// Validate now rather than on every later fetch.
		if _, err := s.engine.ParseChain(ts); err != nil {
			return err
		}
	}
	if _, err := s.images.Image(c.ctx(), user, image); isNotExist(err) {
		return errorf(http.StatusNotFound, "Image does not exist")
	} else if err != nil {
		return err
	}
	if su, err := s.shortURLs.FindShortURL(c.ctx(), user, image, ext, query); err == nil {
		return c.writeJSON(map[string]string{"id": su.ID}, out{})
	} else if !isNotExist(err) {
		return err
	}
	for range 100 {
		su := storage.ShortURL{ID: newShortID(), User: user, Image: image, Extension: ext, Query: query}
		err := s.shortURLs.InsertShortURL(c.ctx(), su)
		if errors.Is(err, storage.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		return c.writeJSON(map[string]string{"id": su.ID}, out{status: http.StatusCreated})
	}
	return errorf(http.StatusServiceUnavailable, "Failed to generate a unique short URL id")
}

// getShortURL serves GET /s/<id>: the image with the stored extension and
// transformations, without access control (the id is the capability).
func (s *Server) getShortURL(c *call) error {
	su, err := s.shortURLs.ShortURL(c.ctx(), c.params["id"])
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "Image not found")
	}
	if err != nil {
		return err
	}
	c.params["user"], c.params["image"] = su.User, su.Image
	img, err := s.images.Image(c.ctx(), su.User, su.Image)
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "Image not found")
	}
	if err != nil {
		return err
	}
	c.originalHeaders(img)
	c.w.Header().Set(c.header("ShortUrl"), requestURL(c))
	_, ts, err := canonicalQuery(su.Query)
	if err != nil {
		return err
	}
	chain, err := c.parseChain(img, ts)
	if err != nil {
		return err
	}
	c.ext = su.Extension
	format, err := c.outputFormat(img.Mime)
	if err != nil {
		return err
	}
	return s.serveImage(c, img, chain, format)
}

// requestURL is the full URL of the request as the client addressed it.
func requestURL(c *call) string {
	return c.s.bases(c)[0] + c.r.URL.RequestURI()
}

func (s *Server) getShortURLParams(c *call) error {
	su, err := s.shortURLs.ShortURL(c.ctx(), c.params["id"])
	if err != nil || su.User != c.params["user"] || su.Image != c.params["image"] {
		if err == nil || isNotExist(err) {
			return errorf(http.StatusNotFound, "ShortURL not found")
		}
		return err
	}
	v, err := shortURLView(su)
	if err != nil {
		return err
	}
	return c.writeJSON(v, out{cache: cacheJSON})
}

// shortURLView is a short URL as the API shows it: its id, user, image,
// extension (null when none) and query ({"t": [...]}, empty when none).
func shortURLView(su storage.ShortURL) (map[string]any, error) {
	var ext any
	if su.Extension != "" {
		ext = su.Extension
	}
	_, ts, err := canonicalQuery(su.Query)
	if err != nil {
		return nil, err
	}
	query := map[string]any{}
	if len(ts) > 0 {
		query["t"] = ts
	}
	return map[string]any{"id": su.ID, "user": su.User, "imageIdentifier": su.Image, "extension": ext,
		"query": query}, nil
}

// listShortURLs serves GET /users/<user>/images/<image>/shorturls: every
// short URL of the image, ordered by id; 404 when the image does not exist.
func (s *Server) listShortURLs(c *call) error {
	user, image := c.params["user"], c.params["image"]
	if _, err := s.images.Image(c.ctx(), user, image); isNotExist(err) {
		return errorf(http.StatusNotFound, "Image does not exist")
	} else if err != nil {
		return err
	}
	list, err := s.shortURLs.ShortURLsOf(c.ctx(), user, image)
	if err != nil {
		return err
	}
	views := make([]map[string]any, len(list))
	for i, su := range list {
		if views[i], err = shortURLView(su); err != nil {
			return err
		}
	}
	return c.writeJSON(map[string]any{"shortUrls": views}, out{})
}

func (s *Server) deleteShortURLs(c *call) error {
	if err := s.shortURLs.DeleteShortURLs(c.ctx(), c.params["user"], c.params["image"]); err != nil {
		return err
	}
	return c.writeJSON(map[string]string{"imageIdentifier": c.params["image"]}, out{})
}

func (s *Server) deleteShortURL(c *call) error {
	err := s.shortURLs.DeleteShortURL(c.ctx(), c.params["user"], c.params["image"], c.params["id"])
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "ShortURL not found")
	}
	if err != nil {
		return err
	}
	return c.writeJSON(map[string]string{"id": c.params["id"]}, out{})
}
