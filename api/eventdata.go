package api

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/vitrine/vitrine/engine"
)

// This file gives listeners (WebAssembly filters through package main, filters.go) the data
// of the request before its resource runs: the upload of images.post with
// its metadata, the document of metadata.put and metadata.post, the image
// of image routes and the custom stats. The resource then uses what the
// listeners left.

// upload is an images.post body as read once and as listeners changed it.
type upload struct {
	read bool
	data []byte
	err  error
	// info is the checked type and size of data (nil until checked).
	info *engine.Info
	// poster is a video's poster as the engine chose it (video.go).
	poster []byte
	// metadata is what listeners set for the new image.
	metadata map[string]any
	// source is the URL the image was fetched from (an upload by URL,
	// urlupload.go), without user information.
	source string
	// origSum is the MD5 of the bytes the client sent, once a listener
	// replaced them.
	origSum string
	// sum is the MD5 of data, in hex, when it is known without hashing
	// data again (a resumable upload hashes its parts as it reads them);
	// "" when not.
	sum string
	// checked and checkedInfo remember the last bytes CheckBody passed, so
	// SetBody with them needs no second decode.
	checked     []byte
	checkedInfo engine.Info
}

// md5 is the MD5 of the upload's data, in hex.
func (u *upload) md5() string {
	if u.sum == "" {
		sum := md5.Sum(u.data)
		u.sum = hex.EncodeToString(sum[:])
	}
	return u.sum
}

// metadataDoc is the document of metadata.put and metadata.post as read
// once and as listeners replaced it.
type metadataDoc struct {
	read bool
	md   map[string]any
	err  error
}

// uploadBody reads the images.post upload once (readUpload).
func (c *call) uploadBody() ([]byte, error) {
	if !c.upload.read {
		c.upload.read = true
		c.upload.data, c.upload.err = c.readUpload()
	}
	return c.upload.data, c.upload.err
}

// uploadInfo checks the (possibly replaced) upload once.
func (c *call) uploadInfo(ctx context.Context) (engine.Info, error) {
	if c.upload.info != nil {
		return *c.upload.info, nil
	}
	data, err := c.uploadBody()
	if err != nil {
		return engine.Info{}, err
	}
	if len(data) == 0 {
		return engine.Info{}, coded(http.StatusBadRequest, codeNoImageAttached, "No image attached")
	}
	var info engine.Info
	if _, video := engine.VideoType(data); video {
		info, c.upload.poster, err = c.s.engine.InspectVideo(ctx, data, c.tokenPixels)
	} else if err = c.s.checkImageSize(data); err == nil {
		info, err = c.s.engine.Inspect(ctx, data)
	}
	if err != nil {
		return engine.Info{}, err
	}
	c.upload.info = &info
	return info, nil
}

// metadataDocument reads the metadata.put/post document once.
func (c *call) metadataDocument() (map[string]any, error) {
	if !c.doc.read {
		c.doc.read = true
		c.doc.md, c.doc.err = c.s.readMetadata(c)
	}
	return c.doc.md, c.doc.err
}

// EventName is the event's `<resource>.<method>`.
func (e *Event) EventName() string { return e.Name }

// ImageInfo describes the upload (images.post) or the stored image (image
// routes) as width, height, mime and size; nil elsewhere.
func (e *Event) ImageInfo(ctx context.Context) (map[string]any, error) {
	c := e.call
	if e.Name == "images.post" {
		info, err := c.uploadInfo(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"width": info.Width, "height": info.Height, "mime": info.Mime, "size": len(c.upload.data)}, nil
	}
	if e.ImageIdentifier() == "" || e.User() == "" {
		return nil, nil
	}
	img, err := c.s.images.Image(ctx, e.User(), e.ImageIdentifier())
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"width": img.Width, "height": img.Height, "mime": img.Mime, "size": img.Size}, nil
}

// Body returns the upload of images.post.
func (e *Event) Body(context.Context) ([]byte, error) { return e.call.uploadBody() }

// CheckBody checks replacement bytes as any upload is checked: size, type,
// dimensions and a full decode.
func (e *Event) CheckBody(ctx context.Context, b []byte) error {
	if limit := e.call.s.cfg.Limits.MaxBodyBytes; int64(len(b)) > limit {
		return errorf(http.StatusRequestEntityTooLarge, "Image too large: %d bytes; the limit is %d bytes (limits.maxBodyBytes)",
			len(b), limit)
	}
	if len(b) == 0 {
		return errorf(http.StatusBadRequest, "No image attached")
	}
	info, err := e.call.s.engine.Inspect(ctx, b)
	if err != nil {
		// engine's errors carry their own status (413 for too large), which
		// is what the caller reads.
		return fmt.Errorf("check body: %w", err)
	}
	e.call.upload.checked, e.call.upload.checkedInfo = b, info
	return nil
}

// MaxBodyBytes is the largest upload CheckBody accepts.
func (e *Event) MaxBodyBytes() int64 { return e.call.s.cfg.Limits.MaxBodyBytes }

// SetBody replaces the upload with checked bytes.
func (e *Event) SetBody(b []byte) {
	c := e.call
	if c.upload.origSum == "" {
		c.upload.origSum = c.upload.md5()
	}
	c.upload.read, c.upload.data, c.upload.err, c.upload.info, c.upload.sum = true, b, nil, nil, ""
	if len(b) > 0 && len(b) == len(c.upload.checked) && &b[0] == &c.upload.checked[0] {
		info := c.upload.checkedInfo
		c.upload.info = &info
	}
}

// Metadata returns what listeners set so far in images.post, the client's
// document in metadata.put and metadata.post, the stored metadata on other
// routes of an image, and nil where there is no image.
func (e *Event) Metadata(ctx context.Context) (map[string]any, error) {
	c := e.call
	switch e.Name {
	case "images.post":
		if c.upload.metadata == nil {
			return map[string]any{}, nil
		}
		return c.upload.metadata, nil
	case "metadata.put", "metadata.post":
		return c.metadataDocument()
	}
	if e.ImageIdentifier() == "" || e.User() == "" {
		return nil, nil
	}
	if _, err := c.s.images.Image(ctx, e.User(), e.ImageIdentifier()); isNotExist(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return c.s.metadata.Metadata(ctx, e.User(), e.ImageIdentifier())
}

// CheckMetadata applies the service's metadata rules: size (413), keys
// and depth (400).
func (e *Event) CheckMetadata(md map[string]any) error {
	lim := e.call.s.cfg.Limits
	b, err := json.Marshal(md)
	if err != nil {
		return errorf(http.StatusBadRequest, "Invalid metadata")
	}
	if int64(len(b)) > lim.MaxMetadataBytes {
		return errorf(http.StatusRequestEntityTooLarge, "Invalid metadata. The document is larger than %d bytes", lim.MaxMetadataBytes)
	}
	return validateMetadata(md, 1, lim.MaxMetadataDepth)
}

// SetMetadata merges md into the new image's metadata (images.post) or
// replaces the client's document (metadata.put and metadata.post).
func (e *Event) SetMetadata(md map[string]any) {
	c := e.call
	if e.Name == "images.post" {
		if c.upload.metadata == nil {
			c.upload.metadata = map[string]any{}
		}
		for k, v := range md {
			c.upload.metadata[k] = v
		}
		return
	}
	c.doc.read, c.doc.md, c.doc.err = true, md, nil
}

// SetStat sets `custom.<filter>.<name>` of a stats.get response: each
// filter's values live in an object of its own, beside its counters.
func (e *Event) SetStat(filter, name string, v any) {
	ns, ok := e.Stats[filter].(map[string]any)
	if !ok {
		ns = map[string]any{}
		e.Stats[filter] = ns
	}
	ns[name] = v
}
