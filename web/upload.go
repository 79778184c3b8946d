package web

import (
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
}

// uploadPageView is the upload page with what the key may upload for.
func (q *request) uploadPageView(user string) uploadView {
	v := uploadView{Page: q.page("Upload images", "upload"), Action: q.path("/upload"), User: user}
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
}

func (u *UI) uploadForm(q *request) error {
	user := q.r.URL.Query().Get("user")
	if user == "" {
		user = q.sess.PublicKey
	}
	v := q.uploadPageView(user)
	status := http.StatusOK
	if !v.Allowed {
		v.Page.Denied = append(v.Page.Denied, "uploading images (no access rule of this key grants images.post)")
		status = http.StatusForbidden
	}
	return q.render(status, uploadPage(v))
}

// upload sends every posted file to POST /users/<user>/images, one by
// one. upload.js posts one file per request with format=json to show
// progress per file; without JavaScript the form posts them all at once.
func (u *UI) upload(q *request) error {
	if err := q.r.ParseMultipartForm(32 << 20); err != nil {
		return &apiError{Status: http.StatusBadRequest, Message: "The upload could not be read: " + err.Error()}
	}
	v := q.uploadPageView(strings.TrimSpace(q.r.FormValue("user")))
	v.User = strings.TrimSpace(q.r.FormValue("user"))
	status := http.StatusOK
	files := q.r.MultipartForm.File["images"]
	if len(files) == 0 {
		v.Results = []uploadResult{{Error: "Choose at least one image."}}
	}
	for _, fh := range files {
		res := uploadResult{File: fh.Filename}
		data, err := readPart(fh)
		if err == nil {
			var r response
			r, err = q.api.send(q.r.Context(), http.MethodPost, "/users/"+url.PathEscape(v.User)+"/images", data, "application/octet-stream")
			if err == nil {
				var got struct {
					ID string `json:"imageIdentifier"`
				}
				_ = json.Unmarshal(r.Body, &got)
				res.ID, res.Href, res.Thumb = got.ID, q.path(q.imagePath(v.User, got.ID)), q.thumbURL(v.User, got.ID)
			}
		}
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Status < 500:
			res.Error = ae.Message
			if ae.denied() {
				res.Error = "Your key may not upload images for " + v.User + ": " + ae.Message
			}
			if len(v.Results) == 0 {
				status = ae.formStatus()
			}
		case err != nil:
			return err
		}
		v.Results = append(v.Results, res)
	}
	if len(files) == 0 {
		status = http.StatusBadRequest
	} else if status != http.StatusOK && slices.ContainsFunc(v.Results, func(r uploadResult) bool { return r.Error == "" }) {
		status = http.StatusOK // some files were stored
	}
	if q.r.FormValue("format") == "json" {
		q.w.Header().Set("Content-Type", "application/json")
		q.w.WriteHeader(status)
		return json.NewEncoder(q.w).Encode(v.Results)
	}
	return q.render(status, uploadPage(v))
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
