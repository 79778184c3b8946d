package engine

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"

	"github.com/davidbyttow/govips/v2/vips"
)

// format is one input type the engine accepts.
type format struct {
	mime string
	ext  string
}

// sniff identifies the input type from its magic bytes; ok is false for
// anything the engine does not load.
func sniff(data []byte) (format, bool) {
	switch {
	case len(data) >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF:
		return format{"image/jpeg", "jpg"}, true
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return format{"image/png", "png"}, true
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return format{"image/gif", "gif"}, true
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return format{"image/webp", "webp"}, true
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return format{"image/tiff", "tif"}, true
	case bytes.HasPrefix(data, []byte("\xff\x0a")),
		bytes.HasPrefix(data, []byte("\x00\x00\x00\x0cJXL \r\n\x87\x0a")):
		// A bare JPEG XL codestream, or the ISO BMFF container.
		return format{"image/jxl", "jxl"}, true
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return format{"application/pdf", "pdf"}, true
	case sniffSVG(data):
		return format{"image/svg+xml", "svg"}, true
	}
	return sniffHEIF(data)
}

// unsupported is the error for bytes no loader handles; the MIME type is the
// one net/http sniffs, without parameters (`text/plain`, not
// `text/plain; charset=utf-8`).
func unsupported(data []byte) error {
	mt := http.DetectContentType(data)
	if base, _, err := mime.ParseMediaType(mt); err == nil {
		mt = base
	}
	return &Error{Kind: KindUnsupported, Msg: "Unsupported image type: " + mt}
}

// invalidImage is the KindCorrupt error for undecodable input; the
// decoder's message is the cause, for the log only.
func invalidImage(cause error) error {
	return &Error{Kind: KindCorrupt, Msg: "Invalid image", Err: cause}
}

// checkSize enforces the configured dimension and pixel limits.
func (e *Engine) checkSize(w, h int) error {
	if w <= 0 || h <= 0 {
		return invalidImage(fmt.Errorf("zero size %dx%d", w, h))
	}
	if w > e.cfg.MaxWidth || h > e.cfg.MaxHeight || int64(w)*int64(h) > e.cfg.MaxPixels {
		return &Error{Kind: KindTooLarge, Msg: fmt.Sprintf("Image too large: %dx%d pixels; the limits are %dx%d and %d pixels in all",
			w, h, e.cfg.MaxWidth, e.cfg.MaxHeight, e.cfg.MaxPixels)}
	}
	return nil
}

// Probe sniffs the type of data and reads its dimensions (and frame count)
// from the header without decoding pixels. It refuses input over the size
// and animation limits (KindTooLarge), types no loader handles
// (KindUnsupported, message `Unsupported image type: <mime>`) and unreadable
// headers or zero sizes (KindCorrupt, `Invalid image`). It does not check
// Config.UploadFormats; Inspect does.
func (e *Engine) Probe(data []byte) (Info, error) {
	f, ok := sniff(data)
	if !ok {
		return Info{}, unsupported(data)
	}
	if err := checkInput(f, data); err != nil {
		return Info{}, err
	}
	// libvips loaders only read the header when an image is opened; pixels
	// are decoded when something asks for them, which Probe never does.
	ref, err := vips.LoadImageFromBuffer(data, e.loadParams(f, vips.NewImportParams()))
	if err != nil {
		return Info{}, invalidImage(err)
	}
	w, h, n := ref.Width(), ref.Height(), ref.Pages()
	ref.Close()
	if f.ext == "pdf" {
		n = 1 // the first page is the image; the others are not read
	}
	if err := e.checkSize(w, h); err != nil {
		return Info{}, err
	}
	if err := e.checkFrames(w, h, n); err != nil {
		return Info{}, err
	}
	return Info{Mime: f.mime, Ext: f.ext, Width: w, Height: h, Frames: max(n, 1)}, nil
}

// Inspect is Probe plus a full decode, so that an upload whose pixels are
// corrupt or truncated is refused (KindCorrupt) before it is stored. Types
// Config.Uploads.Formats does not list are refused as unsupported. A video
// is checked by InspectVideo.
func (e *Engine) Inspect(ctx context.Context, data []byte) (Info, error) {
	if _, ok := VideoType(data); ok {
		info, _, err := e.InspectVideo(ctx, data)
		return info, err
	}
	// A type uploads do not take is refused as such before its loader
	// (or the SVG check) reads anything.
	if f, ok := sniff(data); ok && !e.uploadAllowed(f.ext) {
		msg := "Unsupported image type: " + f.mime
		if f.ext == "svg" || f.ext == "pdf" {
			msg += " (uploads." + f.ext + " is off)"
		}
		return Info{}, &Error{Kind: KindUnsupported, Msg: msg}
	}
	info, err := e.Probe(data)
	if err != nil {
		return Info{}, err
	}
	if err := e.acquire(ctx); err != nil {
		return Info{}, err
	}
	defer e.release()
	f, _ := sniff(data)
	params := e.loadParams(f, vips.NewImportParams()) // fail on the first decoder warning
	params.Access.Set(vips.AccessSequential)
	if info.Frames > 1 {
		params.NumPages.Set(-1) // every frame, within the limits Probe checked
	}
	ref, err := vips.LoadImageFromBuffer(data, params)
	if err != nil {
		return Info{}, invalidImage(err)
	}
	defer ref.Close()
	// Average reads every pixel once, in order: the cheapest full decode.
	if _, err := ref.Average(); err != nil {
		return Info{}, invalidImage(err)
	}
	return info, nil
}
