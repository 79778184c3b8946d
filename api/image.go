package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

func (s *Server) getImage(c *call) error {
	specs, err := transformations(c.query)
	if err != nil {
		return err
	}
	if specs, err = autoQuality(c.query, specs); err != nil {
		return err
	}
	img, err := s.images.Image(c.ctx(), c.params["user"], c.params["image"])
	if isNotExist(err) {
		return errorf(http.StatusNotFound, "Image not found")
	}
	if err != nil {
		return err
	}
	c.originalHeaders(img)
	chain, err := c.parseChain(img, specs)
	if err != nil {
		return err
	}
	if c.ext == "vtt" {
		return s.spriteTrack(c, img, chain)
	}
	format, err := c.outputFormat(img.Mime)
	if err != nil {
		return err
	}
	// t[]=convert:type=webp sets the format, as the interface says; an
	// extension in the path still wins (README, Configuration: contentNegotiateImages).
	if f := chain.ConvertFormat(); f != "" && c.ext == "" {
		format, c.negotiated = f, false
	}
	return s.serveImage(c, img, chain, format)
}

// rangeWriter passes http.ServeContent's answer through but for a 416,
// which it swallows, so the refusal goes out as every error does (JSON);
// the Content-Range: bytes */<size> ServeContent set stays.
type rangeWriter struct {
	http.ResponseWriter
	refused bool
}

func (w *rangeWriter) WriteHeader(code int) {
	if code == http.StatusRequestedRangeNotSatisfiable {
		w.refused = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rangeWriter) Write(b []byte) (int, error) {
	if w.refused {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// svgPolicy is the Content-Security-Policy of stored SVGs served as they
// are: nothing loads or runs but the document's own styles and data: images.
const svgPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"

// originalHeaders describe the stored image on every image response,
// errors included.
func (c *call) originalHeaders(img storage.Image) {
	h := c.w.Header()
	h.Set(c.header("OriginalExtension"), img.Extension)
	h.Set(c.header("OriginalMimeType"), img.Mime)
	h.Set(c.header("OriginalFileSize"), strconv.FormatInt(img.Size, 10))
	h.Set(c.header("OriginalWidth"), strconv.Itoa(img.Width))
	h.Set(c.header("OriginalHeight"), strconv.Itoa(img.Height))
	if img.Frames > 0 {
		h.Set(c.header("OriginalFrames"), strconv.Itoa(img.Frames))
	}
}

// serveImage answers an image GET or HEAD: the stored bytes when nothing
// changes (validators known without reading the blob), otherwise the
// variant from the cache or freshly rendered.
func (s *Server) serveImage(c *call, img storage.Image, chain engine.Chain, format string) error {
	o := out{cache: cacheImages, etag: true, lastModified: img.Updated}
	if chain.Len() == 0 && format == img.Extension {
		etag := `"` + img.Checksum + `"`
		if img.Mime == "image/svg+xml" {
			// An SVG opened as a page runs in the service's origin: its
			// checks refused scripts and external references at upload,
			// and this policy refuses them again in the browser.
			c.w.Header().Set("Content-Security-Policy", svgPolicy)
		}
		c.w.Header().Set("Cache-Control", cacheImages)
		c.w.Header().Set("ETag", etag)
		c.w.Header().Set("Last-Modified", httpDate(img.Updated))
		c.commonHeaders()
		c.setCacheTags()
		if c.notModified(etag, img.Updated) {
			c.w.WriteHeader(http.StatusNotModified)
			return nil
		}
		c.w.Header().Set("Content-Type", img.Mime)
		c.w.Header().Set("Accept-Ranges", "bytes")
		if c.method == http.MethodHead {
			c.w.Header().Set("Content-Length", strconv.FormatInt(img.Size, 10))
			c.w.WriteHeader(http.StatusOK)
			return nil
		}
		data, err := s.blobs.Get(c.ctx(), img.Key())
		if err != nil {
			return fmt.Errorf("image %s/%s: %w", img.User, img.Identifier, err)
		}
		// An original answers byte ranges (206; If-Range with its ETag), so
		// a browser's player seeks in a video without fetching all of it.
		rw := &rangeWriter{ResponseWriter: c.w}
		http.ServeContent(rw, c.r, "", img.Updated, bytes.NewReader(data))
		if rw.refused {
			return errorf(http.StatusRequestedRangeNotSatisfiable, "Range %q lies outside the image's %d bytes: ask for bytes from 0 to %d",
				c.r.Header.Get("Range"), len(data), len(data)-1)
		}
		return nil
	}
	renderStart := time.Now()
	v, hit, err := s.variant(c.ctx(), img, chain, format, c.bestFormats(chain, format), c.limitRender)
	if err != nil {
		return err
	}
	s.countVariant(hit, time.Since(renderStart))
	cacheResult := "Miss"
	if hit {
		cacheResult = "Hit"
	}
	c.w.Header().Set(c.header("TransformationCache"), cacheResult)
	if s.metrics != nil {
		s.metrics.observeCache(hit)
	}
	for k, val := range v.Headers {
		c.w.Header().Set(c.header(k), val)
	}
	return c.writeBody(v.Data, v.Mime, o)
}

// variant is an encoded transformation result as cached.
type variant struct {
	Mime    string            `json:"mime"`
	Headers map[string]string `json:"headers,omitempty"`
	Data    []byte            `json:"-"`
}

// variantMagic starts a cached variant blob: magic, a JSON header line, then
// the image bytes.
const variantMagic = "vitrine-variant-1\n"

func encodeVariant(v variant) []byte {
	head, _ := json.Marshal(v)
	buf := make([]byte, 0, len(variantMagic)+len(head)+1+len(v.Data))
	buf = append(append(append(append(buf, variantMagic...), head...), '\n'), v.Data...)
	return buf
}

func decodeVariant(b []byte) (variant, bool) {
	var v variant
	rest, ok := bytes.CutPrefix(b, []byte(variantMagic))
	if !ok {
		return v, false
	}
	head, data, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok || json.Unmarshal(head, &v) != nil {
		return v, false
	}
	v.Data = data
	return v, true
}

// variant returns the rendered image from the variant cache (hit true) or,
// when admit lets it (the renders rate limit), renders and stores it.
// Concurrent identical misses render once.
// With best (the sorted candidate formats of a best-format render) the
// cache key covers the candidates rather than the one preferred format.
func (s *Server) variant(ctx context.Context, img storage.Image, chain engine.Chain, format string, best []string, admit func() error) (v variant, hit bool, err error) {
	cache := boolOr(s.cfg.CacheVariants, true)
	keyFormat := format
	if len(best) > 0 {
		keyFormat = "best:" + strings.Join(best, "+")
	}
	hash := variantHash(img, chain, keyFormat)
	if cache {
		if b, err := s.variants.Get(ctx, img, hash); err == nil {
			if v, ok := decodeVariant(b); ok {
				return v, true, nil
			}
		} else if !isNotExist(err) {
			s.log.Warn("variant cache read", "user", img.User, "image", img.Identifier, "hash", hash, "err", err)
		}
	}
	if err := admit(); err != nil {
		return v, false, err
	}
	v, _, err = s.flight.do(ctx, storage.VariantKey(img.User, img.Identifier, img.BlobToken, hash), func(ctx context.Context) (variant, error) {
		v, err := s.render(ctx, img, chain, format, best)
		if err == nil && cache {
			stored, err := s.variants.Put(ctx, img, storage.VariantName{Hash: hash, Chain: chain.Key(), Format: format}, encodeVariant(v))
			switch {
			case errors.Is(err, storage.ErrQuotaExceeded):
				// Answered, not cached: the image has as many variants
				// as its user's quota allows.
				s.collector.Wake()
			case err != nil:
				s.log.Warn("variant cache write", "user", img.User, "image", img.Identifier, "hash", hash, "err", err)
			case !stored:
				s.collector.Wake() // the image went meanwhile: its variant's blob is queued
			}
		}
		return v, err
	})
	return v, false, err
}

// render transforms the stored image, from a stored variation when the
// picker finds one that holds enough pixels for the chain; the answer's
// Source header says which ("variation-<width>" or "original").
func (s *Server) render(ctx context.Context, img storage.Image, chain engine.Chain, format string, best []string) (variant, error) {
	var md map[string]any
	if chain.NeedsMetadata() {
		var err error
		if md, err = s.metadata.Metadata(ctx, img.User, img.Identifier); err != nil {
			return variant{}, err
		}
	}
	req := engine.Request{
		Chain:   chain,
		Format:  format,
		Source:  engine.Info{Mime: img.Mime, Ext: img.Extension, Width: img.Width, Height: img.Height},
		Env:     engine.Env{Metadata: md, LoadImage: s.loadOther(img)},
		Formats: best,
		// Engine reads the image's stored auto-quality answers and stores
		// those its search finds.
		Qualities: s.qualitiesOf(img),
	}
	if isVideo(img) && chain.ReadsVideo() {
		res, err := s.renderVideo(ctx, img, req)
		if err != nil {
			return variant{}, err
		}
		return renderedVariant(res, "video"), nil
	}
	// A video's other chains render from the copies built from its poster
	// as an image's from its original's, else from the poster (looked up,
	// or made again, only then).
	baseName, pick := "original", img
	baseKey := func() (string, error) { return img.Key(), nil }
	if isVideo(img) {
		baseName, baseKey = "poster", func() (string, error) { return s.posterKey(ctx, img) }
		pick.Mime, pick.Extension = "image/jpeg", "jpg"
		req.Source = engine.Info{Mime: pick.Mime, Ext: pick.Extension, Width: img.Width, Height: img.Height, Frames: 1}
	}
	source := baseName
	v, ok := s.pickVariation(ctx, pick, chain, req.Env)
	var res *engine.Result
	err := fs.ErrNotExist
	if ok {
		req.Variation = &engine.VariationSource{OrigWidth: v.OrigWidth, OrigHeight: v.OrigHeight, OrigExt: pick.Extension}
		source = "variation-" + strconv.Itoa(v.Width)
		res, err = s.renderFrom(ctx, img, v.Key, req)
	}
	var ee *engine.Error
	if ok && err != nil && errors.As(err, &ee) && ee.HTTPStatus() < 500 {
		return variant{}, err // the request's fault: the original says the same
	}
	if ok && err != nil && !isNotExist(err) && ctx.Err() == nil {
		s.log.Warn("render from a stored variation", "user", img.User, "image", img.Identifier, "key", v.Key, "err", err)
	}
	if !ok || (err != nil && ctx.Err() == nil) {
		// No variation, or it went (its image is being deleted), or it
		// failed: the original (or poster) answers, or says what is wrong.
		key, kerr := baseKey()
		if kerr != nil {
			return variant{}, kerr
		}
		req.Variation, source = nil, baseName
		res, err = s.renderFrom(ctx, img, key, req)
	}
	if err != nil {
		return variant{}, err
	}
	return renderedVariant(res, source), nil
}

// renderedVariant is a render's variant. The output's dimensions go out as
// <prefix>-OutputWidth and -OutputHeight, so a client learns them without
// decoding the bytes; <prefix>-Source says whether a stored variation, the
// original or a video's poster was decoded.
func renderedVariant(res *engine.Result, source string) variant {
	headers := maps.Clone(res.Headers)
	if headers == nil {
		headers = map[string]string{}
	}
	headers["OutputWidth"], headers["OutputHeight"] = strconv.Itoa(res.Width), strconv.Itoa(res.Height)
	headers["Source"] = source
	return variant{Mime: res.Mime, Headers: headers, Data: res.Data}
}

// pickVariation returns the stored variation of img the chain may render
// from (engine.Chain.PickVariation), when variations are on and one fits;
// it looks them up only for a chain that could use one. A failure to list
// them is logged and the original is used.
func (s *Server) pickVariation(ctx context.Context, img storage.Image, chain engine.Chain, env engine.Env) (storage.Variation, bool) {
	if s.variations == nil || chain.VariationScale(img.Width, img.Height, img.Extension, env) == 0 {
		return storage.Variation{}, false
	}
	vs, err := s.variations.Variations(ctx, img)
	if err != nil {
		s.log.Warn("stored variations", "user", img.User, "image", img.Identifier, "err", err)
		return storage.Variation{}, false
	}
	// Only lossless copies (TIFF) hold the decode's exact pixels; JPEG and
	// WebP copies made by earlier versions are not picked.
	vs = slices.DeleteFunc(vs, func(v storage.Variation) bool { return v.Ext != "tif" })
	if len(vs) == 0 {
		return storage.Variation{}, false
	}
	sizes := make([]engine.Variation, len(vs))
	for i, v := range vs {
		sizes[i] = engine.Variation{Width: v.Width, Height: v.Height}
	}
	i := chain.PickVariation(vs[0].OrigWidth, vs[0].OrigHeight, img.Extension, env, sizes)
	if i < 0 {
		return storage.Variation{}, false
	}
	return vs[i], true
}

// renderFrom runs req on the blob at key. The source is read once a
// pipeline slot is free, not while waiting, into a reused buffer, which
// goes back once the render is done (libvips reads the source in place,
// and keeps nothing of it after).
func (s *Server) renderFrom(ctx context.Context, img storage.Image, key string, req engine.Request) (*engine.Result, error) {
	var src []byte
	load := func(ctx context.Context) ([]byte, error) {
		var buf []byte
		if p, ok := sourceBuffers.Get().(*[]byte); ok {
			buf = *p
		}
		var err error
		if src, err = s.blobs.GetInto(ctx, key, buf); err != nil {
			return nil, fmt.Errorf("image %s/%s: %w", img.User, img.Identifier, err)
		}
		return src, nil
	}
	res, err := s.engine.ProcessSource(ctx, load, req)
	if src != nil && (err != nil || !sameArray(res.Data, src)) {
		sourceBuffers.Put(&src)
	}
	return res, err
}

// loadOther returns the Env.LoadImage of img: the stored bytes of another
// image of its user.
func (s *Server) loadOther(img storage.Image) func(ctx context.Context, id string) ([]byte, error) {
	return func(ctx context.Context, id string) ([]byte, error) {
		other, err := s.images.Image(ctx, img.User, id)
		if err != nil {
			if isNotExist(err) {
				return nil, fmt.Errorf("image %s/%s: %w", img.User, id, fs.ErrNotExist)
			}
			return nil, err
		}
		b, err := s.blobs.Get(ctx, other.Key())
		if isNotExist(err) {
			return nil, fmt.Errorf("image %s/%s: %w", img.User, id, fs.ErrNotExist)
		}
		return b, err
	}
}

// sourceBuffers holds source buffers between renders: a 12 MP JPEG is 4-5
// MB, which the Go heap would otherwise zero for every render and collect
// after it.
var sourceBuffers sync.Pool

// sameArray reports whether a and b share their backing array (a result
// that is the source itself must not go back to the pool).
func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][cap(a)-1] == &b[:cap(b)][cap(b)-1]
}

// deleteImage removes the row with its metadata, short URLs and variant
// records in one transaction, which queues the deletion of the image's
// blob and its variants' blobs; the collector deletes them once the answer
// is sent (storage/doc.go). A missing image touches nothing.
func (s *Server) deleteImage(c *call) error {
	user, id := c.params["user"], c.params["image"]
	if err := s.images.DeleteImage(c.ctx(), user, id); err != nil {
		if isNotExist(err) {
			return errorf(http.StatusNotFound, "Image not found")
		}
		return err
	}
	s.collector.Wake()
	return c.writeJSON(map[string]string{"imageIdentifier": id}, out{})
}
