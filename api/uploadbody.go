package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"

	"github.com/vitrine/vitrine/engine"
)

// formSlack is the room a multipart/form-data upload may take beside its
// file: the boundaries, the parts' headers and small fields (a submit
// button's value).
const formSlack = 64 << 10

// readUpload reads the upload of images.post: the body itself or, for a
// multipart/form-data body (a plain HTML form), its one file, capped at
// limits.maxBodyBytes (uploads.videoMaxBytes when videos are on and it is
// larger) and, with an upload token, at the token's maxBytes;
// with a token, the upload's type and pixels are then checked against its
// policy from the header, before anything is decoded.
func (c *call) readUpload() ([]byte, error) {
	most, _ := c.s.uploadLimit()
	limit, t := most, c.token
	if t != nil {
		limit = min(limit, t.MaxBytes)
	}
	data, err := readImageBody(c, limit)
	if err != nil {
		if t != nil && t.MaxBytes < most && httpError(err).Status == http.StatusRequestEntityTooLarge {
			return nil, errorf(http.StatusRequestEntityTooLarge, "Image too large for the upload token: it allows at most %d bytes", t.MaxBytes)
		}
		return nil, err
	}
	return c.tokenAllows(data)
}

// tokenAllows checks the upload data against the policy of the call's
// upload token, if any, from the header: its type and pixels.
func (c *call) tokenAllows(data []byte) ([]byte, error) {
	t := c.token
	if t == nil || len(data) == 0 {
		return data, nil
	}
	var info engine.Info
	var err error
	ext, video := engine.VideoType(data)
	if video {
		// The header is read with the rest of the video's checks
		// (uploadInfo, tokenPixels); the token's type is checked here.
		info.Ext = ext
	} else if info, err = c.s.engine.Probe(data); err != nil {
		return nil, err
	}
	if !slices.Contains(t.Formats, info.Ext) {
		return nil, coded(http.StatusUnsupportedMediaType, codeUnsupportedType, fmt.Sprintf(
			"Image type %s is not accepted by the upload token (it accepts %s)", info.Ext, strings.Join(t.Formats, ", ")))
	}
	if video {
		return data, nil
	}
	return data, c.tokenPixels(info)
}

// tokenPixels refuses an upload over the call's upload token's maxPixels
// (none without a token): an image's from its header, a video's from its
// container's, before a frame is decoded.
func (c *call) tokenPixels(info engine.Info) error {
	t := c.token
	if t == nil {
		return nil
	}
	if px := int64(info.Width) * int64(info.Height); px > t.MaxPixels {
		return errorf(http.StatusRequestEntityTooLarge, "Image too large for the upload token: %dx%d is %d pixels; it allows at most %d",
			info.Width, info.Height, px, t.MaxPixels)
	}
	return nil
}

// readImageBody reads the image of an upload at most limit bytes long:
// the body, the one file of a multipart/form-data body, or the image at
// the URL a JSON body names (urlupload.go).
func readImageBody(c *call, limit int64) ([]byte, error) {
	if u, ok, err := c.uploadURL(); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return c.fetchImage(u, limit)
	}
	mt, params, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return readBody(c, limit)
	}
	if c.r.ContentLength > limit+formSlack {
		return nil, errorf(http.StatusRequestEntityTooLarge, "Request body too large: %d bytes; the limit is %d bytes",
			c.r.ContentLength, limit)
	}
	form := multipart.NewReader(http.MaxBytesReader(c.w, c.r.Body, limit+formSlack), params["boundary"])
	var file []byte
	found := false
	for {
		p, err := form.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, formError(err)
		}
		if p.FileName() == "" {
			// Another field, or a file input left empty: the body's cap
			// bounds what is skipped.
			if _, err := io.Copy(io.Discard, p); err != nil {
				return nil, formError(err)
			}
			continue
		}
		if found {
			return nil, errorf(http.StatusBadRequest, "Send one file per upload: the form holds more than one")
		}
		found = true
		if file, err = io.ReadAll(io.LimitReader(p, limit+1)); err != nil {
			return nil, formError(err)
		}
		if int64(len(file)) > limit {
			return nil, &http.MaxBytesError{Limit: limit}
		}
	}
	if !found {
		return nil, coded(http.StatusBadRequest, codeNoImageAttached, "No image attached: the form holds no file")
	}
	return file, nil
}

// formError is the answer to a multipart body that cannot be read: a 413
// past the cap, a 400 for a malformed form.
func formError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return &Error{Status: http.StatusBadRequest, Msg: "Invalid multipart/form-data body", err: err}
}
