package api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"github.com/vitrine/vitrine/storage"
)

// This file completes a resumable upload (tus.go): once its last byte is
// there, its bytes go through the path of POST /users/<user>/images, and
// the answer, now or on the client's retry, names the image.

// finish ingests a complete upload as POST /users/<user>/images would
// (store); the answer names the image.
func (t *tus) finish(ev tusd.HookEvent) (tusd.HTTPResponse, error) {
	c := tusCall(ev.Context)
	info, err := t.parts.Info(c.ctx(), storeID(ev.Upload.ID))
	if err != nil {
		return tusd.HTTPResponse{}, err
	}
	img, created, err := t.store(c, info)
	if err != nil {
		c.tusErr = err
		e := httpError(err)
		return tusd.HTTPResponse{}, tusd.NewError("ERR_INGEST", e.Msg, e.Status)
	}
	body, header := t.stored(c, img)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	h := tusd.HTTPHeader{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return tusd.HTTPResponse{StatusCode: status, Body: string(body), Header: h}, nil
}

// store ingests the complete upload info. Stored, its parts go and its
// info names the image for uploads.finishedTTL; refused for good (4xx),
// the upload goes; failed in a way a retry may mend (5xx: a blob store or
// database that did not answer), it stays as it is, and the client's
// retry (a HEAD or a PATCH of no bytes) stores it then.
//
// Concurrent requests completing one upload on this instance (a client's
// retries racing its final PATCH) store it once: the others wait and
// answer the same image, not created by them, so an upload token's use is
// spent once.
func (t *tus) store(c *call, info storage.UploadInfo) (storage.Image, bool, error) {
	type stored struct {
		img     storage.Image
		created bool
	}
	ran := false // by this request
	v, err, _ := t.storing.Do(info.ID, func() (any, error) {
		ran = true
		img, created, err := t.storeOnce(c, info)
		return stored{img, created}, err
	})
	r, _ := v.(stored)
	return r.img, r.created && ran, err
}

// storeOnce is store's work, done by one request.
func (t *tus) storeOnce(c *call, info storage.UploadInfo) (storage.Image, bool, error) {
	ctx := context.WithoutCancel(c.ctx())
	img, created, err := t.ingest(ctx, c, info)
	switch {
	case err == nil:
		if ferr := t.parts.Finish(ctx, info, img.Identifier, t.s.now().Add(t.s.cfg.Uploads.FinishedTTL)); ferr != nil {
			t.s.log.Warn("forget the parts of a stored upload (they expire)", "upload", info.ID, "err", ferr)
		}
	case httpError(err).Status < 500:
		if derr := t.parts.Delete(ctx, info.ID); derr != nil {
			t.s.log.Warn("delete the parts of a refused upload (they expire)", "upload", info.ID, "err", derr)
		}
	}
	return img, created, err
}

// stored is the answer's body and headers naming img.
func (t *tus) stored(c *call, img storage.Image) ([]byte, map[string]string) {
	c.params["image"] = img.Identifier
	body, _ := json.Marshal(map[string]any{"imageIdentifier": img.Identifier, "width": img.Width, // never fails
		"height": img.Height, "extension": img.Extension})
	return body, map[string]string{c.header("ImageIdentifier"): img.Identifier}
}

// answerComplete answers a HEAD or a PATCH of an upload whose bytes are
// all there: stored already (its image named), or stored now.
func (t *tus) answerComplete(c *call, info storage.UploadInfo) error {
	status := http.StatusOK
	var img storage.Image
	if info.Image != "" {
		var err error
		if img, err = t.s.images.Image(c.ctx(), info.User, info.Image); err != nil {
			return err // the image was deleted since: 404
		}
	} else {
		var created bool
		var err error
		if img, created, err = t.store(c, info); err != nil {
			return err
		}
		if created {
			status = http.StatusCreated
		}
	}
	body, header := t.stored(c, img)
	h := c.w.Header()
	for k, v := range header {
		h.Set(k, v)
	}
	h.Set("Tus-Resumable", "1.0.0")
	h.Set("Upload-Offset", strconv.FormatInt(info.Size, 10))
	h.Set("Upload-Length", strconv.FormatInt(info.Size, 10))
	h.Set("Cache-Control", "no-store")
	if c.method == http.MethodHead {
		c.w.WriteHeader(status)
		return nil
	}
	h.Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	_, err := c.w.Write(body)
	return err
}

// ingest reads the upload's bytes and stores them as an upload of
// images.post: its listeners run, then the path of postImage.
func (t *tus) ingest(ctx context.Context, c *call, info storage.UploadInfo) (storage.Image, bool, error) {
	data, sum, err := t.read(ctx, c, info)
	if err != nil {
		return storage.Image{}, false, err
	}
	r := c.r.Clone(ctx)
	r.Method = http.MethodPost
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	r.Header.Set("Content-Type", "application/octet-stream")
	ic := &call{s: t.s, w: c.w, r: r, route: t.s.imagesRoute, params: map[string]string{"user": c.params["user"]},
		method: http.MethodPost, publicKey: c.publicKey, query: c.query, custom: map[string]any{},
		authed: c.authed, token: c.token, signed: c.signed}
	ic.upload.metadata = c.upload.metadata
	// The bytes are read: the token's policy is checked on them, and the
	// images.post path takes them as its body, not as a copy.
	ic.upload.read = true
	if ic.upload.data, ic.upload.err = ic.tokenAllows(data); ic.upload.err != nil {
		return storage.Image{}, false, ic.upload.err
	}
	ic.upload.sum = sum
	if err := t.s.Bus.Fire(ctx, &Event{Name: "images.post", call: ic, Stats: ic.custom}); err != nil {
		return storage.Image{}, false, err
	}
	return t.s.storeUpload(ic)
}

// read reads the bytes of the complete upload into one buffer of its
// size, which the upload's limit (limits.maxBodyBytes, a token's maxBytes)
// bounds since its creation, and returns them with their MD5 in hex.
//
// Why a second goroutine: hashing 200 MB takes longer than reading it
// back, so the bytes are hashed a chunk behind the read rather than after
// it (BenchmarkLargeUpload).
func (t *tus) read(ctx context.Context, c *call, info storage.UploadInfo) ([]byte, string, error) {
	if limit, what := t.limit(c); info.Size > limit {
		return nil, "", coded(http.StatusRequestEntityTooLarge, codeTusTooLarge, fmt.Sprintf(
			"The upload's %d bytes are above the limit of %d bytes (%s), lowered since it was created", info.Size, limit, what))
	}
	rc, err := t.parts.Reader(ctx, info.ID)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data := make([]byte, info.Size)
	read := make(chan int, 64) // the end of each chunk read so far
	hashed := make(chan string)
	go func() {
		h, from := md5.New(), 0
		for to := range read {
			h.Write(data[from:to])
			from = to
		}
		hashed <- hex.EncodeToString(h.Sum(nil))
	}()
	const chunk = 1 << 20
	var n int
	for n < len(data) && err == nil {
		var m int
		m, err = io.ReadFull(rc, data[n:min(n+chunk, len(data))])
		n += m
		read <- n
	}
	close(read)
	sum := <-hashed
	if err != nil {
		return nil, "", err
	}
	return data, sum, nil
}
