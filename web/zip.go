package web

import (
	"archive/zip"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"
)

// zip streams the originals of the ticked images as one zip archive,
// user/identifier.ext each, read through the API one at a time so that at
// most one image is in memory. Images are stored as they are (already
// compressed). An image the key may not read, or that went meanwhile, is
// left out and named in MISSING.txt at the end: the archive has begun
// before that is known, so it cannot become an error page.
func (q *request) zip(sel []selected) error {
	if err := q.writeZip(sel); err != nil {
		// The archive has begun: end the connection so the browser sees
		// a broken download rather than a short archive it believes.
		q.ui.cfg.Logger.Error("web: zip of the selected images", "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// zipExtensions names an archived original by its type.
var zipExtensions = map[string]string{"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp",
	"image/tiff": "tif", "image/avif": "avif", "image/heic": "heic", "image/heif": "heic"}

func (q *request) writeZip(sel []selected) error {
	name := fmt.Sprintf("vitrine-%s-%d-images.zip", q.ui.cfg.Now().UTC().Format("20060102-150405"), len(sel))
	h := q.w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("Cache-Control", "no-store")
	zw := zip.NewWriter(q.w)
	var missing []string
	for _, s := range sel {
		r, err := q.api.original(q.r.Context(), q.imagePath(s.User, s.ID))
		if err != nil {
			return err
		}
		if e := r.err(); e != nil {
			missing = append(missing, s.value()+": "+e.Message)
			continue
		}
		ext, ok := zipExtensions[r.Header.Get("Content-Type")]
		if !ok {
			ext = "bin"
		}
		modified, _ := http.ParseTime(r.Header.Get("Last-Modified"))
		w, err := zw.CreateHeader(&zip.FileHeader{Name: s.User + "/" + s.ID + "." + ext, Method: zip.Store,
			Modified: modified.UTC()})
		if err != nil {
			return err
		}
		if _, err := w.Write(r.Body); err != nil {
			return err
		}
		if f, ok := q.w.(http.Flusher); ok {
			f.Flush()
		}
	}
	if len(missing) > 0 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "MISSING.txt", Method: zip.Deflate, Modified: time.Now().UTC()})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "Left out of this archive:\n%s\n", strings.Join(missing, "\n")); err != nil {
			return err
		}
	}
	return zw.Close()
}
