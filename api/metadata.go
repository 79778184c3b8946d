package api

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

func (s *Server) getMetadata(c *call) error {
	img, err := s.images.Image(c.ctx(), c.params["user"], c.params["image"])
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "Image not found")
	}
	if err != nil {
		return err
	}
	md, err := s.metadata.Metadata(c.ctx(), img.User, img.Identifier)
	if err != nil {
		return err
	}
	return c.writeJSON(md, out{cache: cacheJSON, etag: true, lastModified: img.Updated})
}

// readMetadata reads and validates a metadata document, which must be a
// JSON object.
func (s *Server) readMetadata(c *call) (map[string]any, error) {
	var doc any
	err := c.readJSON(s.cfg.Limits.MaxMetadataBytes, &doc)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errorf(http.StatusBadRequest, "Invalid metadata. The document is larger than %d bytes", mbe.Limit)
	}
	if err != nil {
		return nil, err
	}
	md, ok := doc.(map[string]any)
	if !ok {
		return nil, errorf(http.StatusBadRequest, "Invalid metadata. A JSON object is expected")
	}
	if err := validateMetadata(md, 1, s.cfg.Limits.MaxMetadataDepth); err != nil {
		return nil, err
	}
	return md, nil
}

// validateMetadata checks keys at every depth and the nesting limit.
func validateMetadata(v any, depth, max int) error {
	if depth > max {
		return errorf(http.StatusBadRequest, "Invalid metadata. Nesting deeper than %d levels is not allowed", max)
	}
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			var why string
			switch {
			case k == "":
				why = "Empty keys are not allowed"
			case strings.Contains(k, "."):
				why = "Dot characters ('.') are not allowed in metadata keys"
			case strings.Contains(k, "::"):
				why = "'::' is not allowed in metadata keys"
			case strings.HasPrefix(k, "$"):
				why = "Keys must not start with '$'"
			}
			if why != "" {
				return errorf(http.StatusBadRequest, "Invalid metadata. %s", why)
			}
			if err := validateMetadata(child, depth+1, max); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range t {
			if err := validateMetadata(child, depth+1, max); err != nil {
				return err
			}
		}
	}
	return nil
}

// putMetadata serves PUT .../metadata. With If-Match, the document
// replaces the stored one only while that still answers GET with one of
// the ETags given (or with "*", while the image exists), so a client that
// read, changed and writes back the metadata loses no change made
// meanwhile: it gets a 412 and reads again.
func (s *Server) putMetadata(c *call) error {
	md, err := c.metadataDocument()
	if err != nil {
		return err
	}
	user, id := c.params["user"], c.params["image"]
	if match := c.r.Header.Get("If-Match"); match != "" {
		err = s.metadata.UpdateMetadata(c.ctx(), user, id, func(cur map[string]any) (map[string]any, error) {
			if !etagMatches(match, cur) {
				return nil, errorf(http.StatusPreconditionFailed, "Metadata changed since it was read")
			}
			return md, nil
		})
	} else {
		err = s.metadata.SetMetadata(c.ctx(), user, id, md)
	}
	if err != nil {
		return metadataErr(err)
	}
	s.purgeVariants(context.WithoutCancel(c.ctx()), c.params["user"], c.params["image"])
	return c.writeJSON(md, out{})
}

func (s *Server) postMetadata(c *call) error {
	md, err := c.metadataDocument()
	if err != nil {
		return err
	}
	merged, err := s.metadata.MergeMetadata(c.ctx(), c.params["user"], c.params["image"], md)
	if err != nil {
		return metadataErr(err)
	}
	s.purgeVariants(context.WithoutCancel(c.ctx()), c.params["user"], c.params["image"])
	return c.writeJSON(merged, out{})
}

func (s *Server) deleteMetadata(c *call) error {
	if err := s.metadata.DeleteMetadata(c.ctx(), c.params["user"], c.params["image"]); err != nil {
		return metadataErr(err)
	}
	s.purgeVariants(context.WithoutCancel(c.ctx()), c.params["user"], c.params["image"])
	return c.writeJSON(map[string]any{}, out{})
}

// etagMatches reports whether an If-Match header names the ETag GET
// answers for the document cur (the MD5 of its JSON), or is "*".
func etagMatches(header string, cur map[string]any) bool {
	body, err := json.Marshal(cur)
	if err != nil {
		return false
	}
	sum := md5.Sum(body)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	for _, t := range strings.Split(header, ",") {
		if t = strings.TrimSpace(t); t == "*" || t == etag {
			return true
		}
	}
	return false
}

func metadataErr(err error) error {
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "Image not found")
	}
	return fmt.Errorf("metadata: %w", err)
}
