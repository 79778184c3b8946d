package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// uploadView is the upload form and, after a post without JavaScript, the
// result of each file.
type uploadView struct {
	Page    pageView
	Action  string
	User    string
	Results []uploadResult
	// Users are those the key may upload for, when it may not upload for
	// every user; the field is then a choice among them.
	Users []string
	// Allowed is false when the key may upload for no user at all.
	Allowed bool
	// Formats names the accepted types ("JPEG, PNG or GIF"), Accept lists
	// them for the file input; empty when GET /status does not answer.
	Formats, Accept string
}

// uploadTypes names the types of extensions for people and for the file
// input's accept attribute.
var uploadTypes = map[string]struct{ name, mime string }{
	"jpg": {"JPEG", "image/jpeg"}, "png": {"PNG", "image/png"}, "gif": {"GIF", "image/gif"},
	"webp": {"WebP", "image/webp"}, "tif": {"TIFF", "image/tiff"}, "avif": {"AVIF", "image/avif"},
	"heic": {"HEIC", "image/heic"}, "jxl": {"JPEG XL", "image/jxl"}, "svg": {"SVG", "image/svg+xml"},
	"pdf": {"PDF", "application/pdf"},
}

// uploadFormats describes the types the API accepts for upload, as GET
// /status lists them (the page works without them).
func (q *request) uploadFormats() (names, accept string) {
	var st api.Status
	if err := q.api.getJSON(q.r.Context(), "/status", nil, &st); err != nil {
		return "", ""
	}
	var ns, as []string
	for _, ext := range st.UploadFormats {
		t, ok := uploadTypes[ext]
		if !ok {
			t = struct{ name, mime string }{strings.ToUpper(ext), ""}
		}
		ns = append(ns, t.name)
		as = append(as, "."+ext)
		if t.mime != "" {
			as = append(as, t.mime)
		}
	}
	switch len(ns) {
	case 0:
		return "", ""
	case 1:
		names = ns[0]
	default:
		names = strings.Join(ns[:len(ns)-1], ", ") + " or " + ns[len(ns)-1]
	}
	return names, strings.Join(as, ",")
}

// uploadPageView is the upload page with what the key may upload for.
func (q *request) uploadPageView(user string) uploadView {
	v := uploadView{Page: q.page("Upload images", "upload"), Action: q.path("/upload"), User: user}
	v.Formats, v.Accept = q.uploadFormats()
	users := q.uploadUsers()
	v.Allowed = len(users) > 0
	if !slices.Contains(users, "*") {
		v.Users = users
		if !slices.Contains(users, v.User) && len(users) > 0 {
			v.User = users[0]
		}
	}
	return v
}

// uploadResult is the outcome of one file; upload.js gets it as JSON.
type uploadResult struct {
	File  string `json:"file"`
	ID    string `json:"id,omitempty"`
	Href  string `json:"href,omitempty"`
	Thumb string `json:"thumb,omitempty"`
	Error string `json:"error,omitempty"`
	// Existed is set when the user had this very image already (the API
	// answers 200 rather than 201 and stores nothing new).
	Existed bool `json:"existed,omitempty"`
}

// lastUserCookie remembers the user this browser last uploaded for, the
// upload form's default. Why not the signed-in key's name: a key (admin)
// is not a user, and images stored under its name are rarely meant.
const lastUserCookie = "vitrine_upload_user"

func (u *UI) uploadForm(q *request) error {
	user := q.r.URL.Query().Get("user")
	if c, err := q.r.Cookie(lastUserCookie); user == "" && err == nil {
		user, _ = url.QueryUnescape(c.Value)
	}
	v := q.uploadPageView(user)
	status := http.StatusOK
	if !v.Allowed {
		v.Page.Denied = append(v.Page.Denied, "uploading images (no access rule of this key grants images.post)")
		status = http.StatusForbidden
	}
	if ids := q.r.URL.Query()["uploaded"]; len(ids) > 0 {
		// Where a post without JavaScript lands: the images it stored.
		v.User = user
		l, err := q.list(q.r.Context(), "/users/"+url.PathEscape(user)+"/images", url.Values{"ids[]": ids})
		if _, denied := denial(err); err != nil && !denied {
			return err
		}
		existed := q.r.URL.Query()["existed"]
		for _, im := range l.Images {
			v.Results = append(v.Results, uploadResult{File: fmt.Sprintf("%d×%d %s", im.Width, im.Height, im.Extension),
				ID: im.ID, Href: q.path(q.imagePath(user, im.ID)), Thumb: q.thumbURL(user, im.ID),
				Existed: slices.Contains(existed, im.ID)})
		}
		v.Page.Notice = countLabel(len(v.Results)) + " uploaded for " + user + "."
		if n := len(existed); n > 0 {
			v.Page.Notice = countLabel(len(v.Results)) + " sent for " + user + ", of which " + strconv.Itoa(n) + " already existed."
		}
	}
	if q.r.URL.Query().Get("format") == "json" {
		// What upload.js shows for a file it uploaded with tus.
		return q.writeJSON(status, v.Results)
	}
	return q.render(status, uploadPage(v))
}

// upload sends every posted file to POST /users/<user>/images, one by
// one. upload.js posts one file per request with format=json to show
// progress per file; without JavaScript the form posts them all at once.
func (u *UI) upload(q *request) error {
	// A form without files (an image by URL) may come URL-encoded.
	if err := q.r.ParseMultipartForm(32 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return &apiError{Status: http.StatusBadRequest, Message: "The upload could not be read: " + err.Error()}
	}
	v := q.uploadPageView(strings.TrimSpace(q.r.FormValue("user")))
	v.User = strings.TrimSpace(q.r.FormValue("user"))
	items := uploadItems(q.r)
	if len(items) == 0 {
		v.Results = []uploadResult{{Error: "Choose at least one image, or give the URL of one."}}
	}
	status := http.StatusOK
	for _, it := range items {
		res, refused, err := q.sendItem(v.User, it)
		if err != nil {
			return err
		}
		if refused != nil && len(v.Results) == 0 {
			status = refused.formStatus()
		}
		v.Results = append(v.Results, res)
	}
	if len(items) == 0 {
		status = http.StatusBadRequest
	} else if status != http.StatusOK && slices.ContainsFunc(v.Results, uploadResult.stored) {
		status = http.StatusOK // some files were stored
	}
	return u.uploaded(q, v, status)
}

// uploadItem is one image to upload: a posted file, or the JSON document
// that names an image by URL; byURL sends it to the fetching operation.
type uploadItem struct {
	name  string
	read  func() ([]byte, error)
	ct    string
	byURL bool
}

// uploadItems lists the files posted to the upload form, then the image by
// URL, if the form gives one: the API fetches that (POST
// /users/<user>/images/url with the JSON document {"url": ...}), through
// its guard of outbound connections.
func uploadItems(r *http.Request) []uploadItem {
	var items []uploadItem
	if r.MultipartForm != nil {
		for _, fh := range r.MultipartForm.File["images"] {
			items = append(items, uploadItem{fh.Filename, func() ([]byte, error) { return readPart(fh) }, "application/octet-stream", false})
		}
	}
	if source := strings.TrimSpace(r.FormValue("url")); source != "" {
		doc, _ := json.Marshal(map[string]string{"url": source})
		items = append(items, uploadItem{source, func() ([]byte, error) { return doc, nil }, "application/json", true})
	}
	return items
}

// sendItem sends it to POST /users/<user>/images (or .../images/url) and returns its
// outcome, with the API's refusal when it refused (the outcome then says
// why). The error is one the page fails with: the API's failure (5xx, but
// for a fetch by URL that failed at the origin), or an answer that cannot
// be read or names no image.
func (q *request) sendItem(user string, it uploadItem) (uploadResult, *apiError, error) {
	res := uploadResult{File: it.name}
	data, err := it.read()
	if err == nil {
		var r response
		path := "/users/" + url.PathEscape(user) + "/images"
		if it.byURL {
			path += "/url"
		}
		r, err = q.api.send(q.r.Context(), http.MethodPost, path, data, it.ct)
		if err == nil {
			var got api.Uploaded
			if err := r.decode(&got); err != nil {
				return res, nil, err
			}
			id := got.ImageIdentifier
			if id == "" {
				return res, nil, errors.New("web: the API's answer to an upload names no image")
			}
			res.ID, res.Href, res.Thumb = id, q.path(q.imagePath(user, id)), q.thumbURL(user, id)
			res.Existed = r.Status == http.StatusOK
			return res, nil, nil
		}
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status >= 500 && !(it.byURL && fetchFailed(ae.Status)) {
		return res, nil, err
	}
	// A fetch by URL that failed at the origin (502, 504) is the URL's
	// fault, said as plainly as a refusal.
	res.Error = ae.Message
	if ae.denied() {
		res.Error = "Your key may not upload images for " + user + ": " + ae.Message
	}
	return res, ae, nil
}

// stored reports whether the image was stored (or existed already).
func (r uploadResult) stored() bool { return r.Error == "" }

// uploaded answers an upload whose outcomes v holds, with status: JSON
// for upload.js; without JavaScript a redirect to the images stored when
// every one was, or else the form again with each file's outcome. When
// any was stored, the browser remembers the user (lastUserCookie).
func (u *UI) uploaded(q *request, v uploadView, status int) error {
	if slices.ContainsFunc(v.Results, uploadResult.stored) {
		http.SetCookie(q.w, u.cookie(q.r, lastUserCookie, url.QueryEscape(v.User), 365*24*3600))
	}
	if q.r.FormValue("format") == "json" {
		return q.writeJSON(status, v.Results)
	}
	if !slices.ContainsFunc(v.Results, func(r uploadResult) bool { return !r.stored() }) {
		// All stored: post, redirect, get, so that a reload posts nothing.
		done := url.Values{"user": {v.User}}
		for _, r := range v.Results {
			done.Add("uploaded", r.ID)
			if r.Existed {
				done.Add("existed", r.ID)
			}
		}
		return q.redirect("/upload?" + done.Encode())
	}
	// Some file was refused: the form is shown again with every file's
	// outcome, as a form with errors is.
	return q.render(status, uploadPage(v))
}

// fetchFailed reports whether status is the API's answer to a fetch by URL
// that the origin failed (it answered an error, or not in time).
func fetchFailed(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusGatewayTimeout
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
