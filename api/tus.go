package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	tusd "github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/memorylocker"
	"golang.org/x/exp/slog"
	"golang.org/x/sync/singleflight"

	"github.com/vitrine/vitrine/storage"
)

// This file serves resumable uploads (api/README.md, Resumable uploads): tus 1.0
// at /users/<user>/uploads with the creation, creation-with-upload,
// termination and expiration extensions, tusd's handler speaking the
// protocol. A request passes the service's listeners first (a signature
// like any write, or an upload token, and the access rule uploads.<method>);
// the upload's parts are kept by storage.Resumable; when the last byte
// arrives, the upload goes through the path of POST /users/<user>/images
// (storeUpload) and the answer names the image.
//
// tusstore.go is tusd's data store over storage.Resumable; tuscomplete.go
// stores an upload whose bytes are all there.

// Service error codes of resumable upload refusals (api/README.md, Resumable
// uploads).
const (
	codeTusOffset    = 140 // Upload-Offset is not the upload's offset
	codeTusTooLarge  = 141 // Upload-Length above the limit
	codeTusPastEnd   = 142 // a PATCH past the declared length
	codeTusUnknown   = 143 // no such upload (for this user and credential)
	codeTusExpired   = 144 // the upload expired
	codeTusConflict  = 145 // another request is writing the upload
	codeTusMalformed = 146 // a tus request the protocol does not allow
)

// uploadIDPattern is the id segment of an upload's URL.
var uploadIDPattern = regexp.MustCompile(`^[a-f0-9]{32}$`)

// tusHeaders are the tus headers a page may send and read (CORS).
var tusHeaders = []string{"Tus-Resumable", "Upload-Offset", "Upload-Length", "Upload-Metadata",
	"Upload-Expires", "Location", "Tus-Version", "Tus-Extension", "Tus-Max-Size"}

// tusCallKey carries the call into tusd's hooks and the data store.
type tusCallKey struct{}

func tusCall(ctx context.Context) *call {
	c, _ := ctx.Value(tusCallKey{}).(*call)
	return c
}

// tus is the protocol handler with its store.
type tus struct {
	s     *Server
	parts *storage.Resumable
	h     *tusd.UnroutedHandler
	serve http.Handler
	// storing joins the requests completing one upload (store).
	storing singleflight.Group
}

// newTus builds the tus handler over parts.
func newTus(s *Server, parts *storage.Resumable) (*tus, error) {
	t := &tus{s: s, parts: parts}
	composer := tusd.NewStoreComposer()
	composer.UseCore(t)
	composer.UseTerminater(t)
	// The lock is per instance; between instances, a part is created only
	// if no other request created it first (storage.Resumable).
	memorylocker.New().UseIn(composer)
	maxUpload, _ := s.uploadLimit()
	h, err := tusd.NewUnroutedHandler(tusd.Config{
		StoreComposer:             composer,
		BasePath:                  "/",
		MaxSize:                   maxUpload,
		DisableDownload:           true,
		DisableConcatenation:      true,
		Cors:                      &tusd.CorsConfig{Disable: true},
		RespectForwardedHeaders:   len(s.cfg.TrustedProxies) > 0,
		Logger:                    slog.New(slog.NewTextHandler(io.Discard, nil)),
		PreUploadCreateCallback:   t.preCreate,
		PreFinishResponseCallback: t.finish,
	})
	if err != nil {
		return nil, fmt.Errorf("api: tus: %w", err)
	}
	t.h = h
	t.serve = h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			h.PostFile(w, r)
		case http.MethodHead:
			h.HeadFile(w, r)
		case http.MethodPatch:
			h.PatchFile(w, r)
		case http.MethodDelete:
			h.DelFile(w, r)
		}
	}))
	return t, nil
}

// serveUploads serves the tus requests of /users/<user>/uploads[/<id>]
// once the listeners let them through.
func (s *Server) serveUploads(c *call) error {
	t := s.tus
	if err := s.refuseErasing(c.ctx(), c.params["user"]); err != nil {
		return err
	}
	info, err := t.check(c)
	if err != nil {
		return err
	}
	// An upload whose bytes are all there is answered here: one stored
	// already names its image; one whose storing failed with a retryable
	// error (its parts kept) is stored now, so that the client's retry
	// sends nothing again.
	if (c.method == http.MethodHead || c.method == http.MethodPatch) && info.ID != "" &&
		(info.Image != "" || info.Offset == info.Size && info.Size > 0) {
		return t.answerComplete(c, info)
	}
	// The method the listeners authorised is the one served.
	c.r.Header.Del("X-HTTP-Method-Override")
	r := c.r.WithContext(context.WithValue(c.ctx(), tusCallKey{}, c))
	tw := &tusWriter{ResponseWriter: c.w}
	t.serve.ServeHTTP(tw, r)
	if tw.status == 0 {
		return nil
	}
	h := c.w.Header()
	h.Del("Content-Type")
	h.Del("Content-Length")
	if c.tusErr != nil {
		return c.tusErr
	}
	return tusRefusal(tw.status, tw.body.String())
}

// serveTusOptions answers OPTIONS on the upload routes: tus's discovery
// (Tus-Version, Tus-Extension, Tus-Max-Size), with no credential needed.
func (s *Server) serveTusOptions(c *call) error {
	c.commonHeaders()
	h := c.w.Header()
	h.Set("Tus-Resumable", "1.0.0")
	h.Set("Tus-Version", "1.0.0")
	h.Set("Tus-Extension", s.tus.h.SupportedExtensions()+",expiration")
	limit, _ := s.uploadLimit()
	h.Set("Tus-Max-Size", strconv.FormatInt(limit, 10))
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// check refuses what the service can name better than tusd: an upload
// above the limits at creation, and for an existing upload one that is
// unknown, expired, at another offset or written past its end. Every
// answer about an existing upload carries Upload-Expires. It returns the
// upload's info for a request about an existing one.
func (t *tus) check(c *call) (storage.UploadInfo, error) {
	if c.method == http.MethodPost {
		if v := c.r.Header.Get("Upload-Length"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return storage.UploadInfo{}, coded(http.StatusBadRequest, codeTusMalformed, fmt.Sprintf("Upload-Length must be a number of bytes, not %q", v))
			}
			if limit, what := t.limit(c); n > limit {
				return storage.UploadInfo{}, coded(http.StatusRequestEntityTooLarge, codeTusTooLarge, fmt.Sprintf(
					"Upload-Length %d is above the limit of %d bytes (%s)", n, limit, what))
			}
		} else if c.r.Header.Get("Upload-Defer-Length") != "" {
			return storage.UploadInfo{}, coded(http.StatusBadRequest, codeTusMalformed, "Upload-Defer-Length is not supported: send Upload-Length")
		}
		return storage.UploadInfo{}, nil
	}
	// The call goes with the context: load checks the upload's user and
	// token against it (answerComplete acts on what this returns).
	info, err := t.load(context.WithValue(c.ctx(), tusCallKey{}, c), c.params["upload"])
	if err != nil {
		if c.method == http.MethodDelete && errors.Is(err, errUploadExpired) {
			return storage.UploadInfo{}, nil // an expired upload may still be terminated
		}
		return info, err
	}
	c.w.Header().Set("Upload-Expires", httpDate(info.Expires))
	if c.method != http.MethodPatch || info.Image != "" {
		return info, nil
	}
	v := c.r.Header.Get("Upload-Offset")
	offset, err := strconv.ParseInt(v, 10, 64)
	if err != nil || offset < 0 {
		return info, coded(http.StatusBadRequest, codeTusMalformed, fmt.Sprintf("Upload-Offset must be a number of bytes, not %q", v))
	}
	if offset != info.Offset {
		return info, coded(http.StatusConflict, codeTusOffset, fmt.Sprintf(
			"Upload-Offset %d does not match the upload's offset %d: send the bytes from %d (HEAD tells the offset)",
			offset, info.Offset, info.Offset))
	}
	if n := c.r.ContentLength; n > 0 && offset+n > info.Size {
		return info, coded(http.StatusRequestEntityTooLarge, codeTusPastEnd, fmt.Sprintf(
			"The PATCH goes past the upload's end: %d bytes from offset %d, but Upload-Length is %d", n, offset, info.Size))
	}
	return info, nil
}

// limit is the largest upload the call may create, and the setting that
// says so.
func (t *tus) limit(c *call) (int64, string) {
	limit, what := t.s.uploadLimit()
	if c.token != nil && c.token.MaxBytes < limit {
		limit, what = c.token.MaxBytes, "the upload token's maxBytes"
	}
	return limit, what
}

var errUploadExpired = coded(http.StatusGone, codeTusExpired, "The upload expired: create a new one")

// load reads the upload id of the call's user; an upload of another user
// or, for a call with an upload token, of another token is unknown.
func (t *tus) load(ctx context.Context, id string) (storage.UploadInfo, error) {
	c := tusCall(ctx)
	unknown := coded(http.StatusNotFound, codeTusUnknown, fmt.Sprintf("Unknown upload %s", id))
	info, err := t.parts.Info(ctx, id)
	if isNotExist(err) {
		return info, unknown
	}
	if err != nil {
		return info, err
	}
	if c == nil {
		return info, nil
	}
	if info.User != c.params["user"] || (c.token != nil && info.Token != c.token.Hash) {
		return info, unknown
	}
	if !t.s.now().Before(info.Expires) {
		return info, errUploadExpired
	}
	return info, nil
}

// tusRefusal is the service's error for a refusal of tusd's (its body is
// "ERR_CODE: message").
func tusRefusal(status int, body string) error {
	code, msg, _ := strings.Cut(strings.TrimSpace(body), ": ")
	svc := codeTusMalformed
	switch code {
	case "ERR_MISMATCHED_OFFSET":
		svc, msg = codeTusOffset, "Upload-Offset does not match the upload's offset (HEAD tells it)"
	case "ERR_MAX_SIZE_EXCEEDED":
		svc, msg = codeTusTooLarge, "Upload-Length is above the limit (limits.maxBodyBytes)"
	case "ERR_UPLOAD_SIZE_EXCEEDED":
		svc, msg = codeTusPastEnd, "The PATCH goes past the upload's declared Upload-Length"
	case "ERR_UPLOAD_NOT_FOUND":
		svc, msg = codeTusUnknown, "Unknown upload"
	case "ERR_UPLOAD_LOCKED", "ERR_UPLOAD_INTERRUPTED", "ERR_LOCK_TIMEOUT", "ERR_UPLOAD_CONFLICT":
		svc, msg = codeTusConflict, "Another request is writing this upload: "+msg
	case "ERR_UNSUPPORTED_VERSION":
		msg = "Tus-Resumable: want 1.0.0 (tus 1.0)"
	case "ERR_INVALID_CONTENT_TYPE":
		msg = "Content-Type of a PATCH must be application/offset+octet-stream"
	case "ERR_INVALID_OFFSET":
		msg = "Upload-Offset is missing or not a number of bytes"
	case "ERR_INVALID_UPLOAD_LENGTH", "ERR_INVALID_UPLOAD_LENGTH_DEFER", "ERR_AMBIGUOUS_UPLOAD_LENGTH":
		msg = "Upload-Length is missing or not a number of bytes (Upload-Defer-Length is not supported)"
	case "ERR_CONCATENATION_UNSUPPORTED":
		msg = "Upload-Concat is not supported"
	default:
		if status >= 500 {
			return &Error{Status: status, Msg: http.StatusText(status), err: errors.New(body)}
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
		msg = "tus: " + msg
	}
	return coded(status, svc, msg)
}

// tusWriter holds back tusd's error answers, which the service writes in
// its error model instead.
type tusWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *tusWriter) WriteHeader(code int) {
	if code >= 400 {
		w.status = code
		return
	}
	h := w.Header()
	if code != http.StatusCreated || h.Get("Content-Type") != "" {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	// A creation that did not complete the upload: tusd answers no body,
	// the service's answers are JSON.
	offset, _ := strconv.ParseInt(h.Get("Upload-Offset"), 10, 64)
	body, _ := json.Marshal(map[string]any{"location": h.Get("Location"), "expires": h.Get("Upload-Expires"), "offset": offset})
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.ResponseWriter.WriteHeader(code)
	_, _ = w.ResponseWriter.Write(body)
}

func (w *tusWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (tusd's read deadlines) reach the
// connection.
func (w *tusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
