package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Bulk actions work on the images ticked in a grid (checkboxes named sel,
// each "user/identifier", in one form that works without JavaScript). Each
// image goes through the API on its own, so the key's rules decide per
// image; the result comes back to the grid as a flash (post, redirect,
// get).

// maxSelection bounds the images one bulk action takes.
const maxSelection = 200

// selected is one ticked image.
type selected struct{ User, ID string }

func (s selected) value() string { return s.User + "/" + s.ID }

// selection reads the ticked images of a form or query, dropping
// duplicates and anything that is not a user and an identifier.
func selection(vals []string) ([]selected, error) {
	var out []selected
	for _, v := range vals {
		user, id, ok := strings.Cut(v, "/")
		if !ok || !validName(user) || id == "" || strings.ContainsAny(id, "/?#.") {
			return nil, &apiError{Status: http.StatusBadRequest, Message: "“" + v + "” is not an image of the grid."}
		}
		if s := (selected{user, id}); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, &apiError{Status: http.StatusBadRequest, Message: "No image is ticked: tick the images to act on, then choose the action."}
	}
	if len(out) > maxSelection {
		return nil, &apiError{Status: http.StatusBadRequest, Message: "At most " + itoa(maxSelection) + " images at once."}
	}
	return out, nil
}

// bulkResult is the flash a bulk action leaves for the grid.
type bulkResult struct {
	Bulk     bool     `json:"bulk"`
	Notice   string   `json:"notice"`
	Failures []string `json:"failures"`
}

// takeBulkResult shows a bulk action's result on the grid's page.
func (q *request) takeBulkResult(v *imagesView) {
	var r bulkResult
	if q.takeFlash(&r) && r.Bulk {
		v.Page.Notice, v.BulkFailures = r.Notice, r.Failures
	}
}

// back is the grid a bulk action returns to.
func (q *request) back(form url.Values) string {
	return safeNext(q.ui.cfg.Prefix, form.Get("back"))
}

// bulk runs the action chosen in a grid's form on the ticked images;
// delete first asks on a page of its own.
func (u *UI) bulk(q *request) error {
	sel, err := selection(q.r.PostForm["sel"])
	if err != nil {
		return err
	}
	back := q.back(q.r.PostForm)
	switch q.r.PostFormValue("action") {
	case "zip":
		return q.zip(sel)
	case "delete":
		qs := url.Values{"back": {back}}
		for _, s := range sel {
			qs.Add("sel", s.value())
		}
		http.Redirect(q.w, q.r, q.path("/bulk/delete?"+qs.Encode()), http.StatusSeeOther)
		return nil
	case "md-set":
		return q.bulkMetadata(sel, back, true)
	case "md-remove":
		return q.bulkMetadata(sel, back, false)
	}
	return &apiError{Status: http.StatusBadRequest, Message: "Unknown action: choose one of the grid's buttons."}
}

// finish leaves the result of a bulk action for the grid and goes back.
func (q *request) finish(back, done string, n int, failures []string) error {
	msg := done + " " + countLabel(n) + "."
	if len(failures) > 0 {
		msg += " " + plural(len(failures), "image was", "images were") + " left unchanged:"
	}
	if len(failures) > 5 {
		failures = append(failures[:5], "…")
	}
	if err := q.setFlash(bulkResult{Bulk: true, Notice: msg, Failures: failures}); err != nil {
		return err
	}
	http.Redirect(q.w, q.r, back, http.StatusSeeOther)
	return nil
}

// failure describes why one image was left as it was.
func failure(s selected, err error) (string, error) {
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status >= 500 {
		return "", err
	}
	return shortID(s.ID) + " of " + s.User + ": " + refusalMessage(ae), nil
}

// bulkMetadata sets (POST merges it in) or removes (removeMetadataKey) one
// top-level metadata key on each ticked image. A value that is JSON (a
// number, true, "quoted") is stored as such, anything else as text.
func (q *request) bulkMetadata(sel []selected, back string, set bool) error {
	ctx := q.r.Context()
	key := strings.TrimSpace(q.r.PostFormValue("mdkey"))
	if key == "" {
		return &apiError{Status: http.StatusBadRequest, Message: "Name the metadata key to set or remove."}
	}
	var value any = q.r.PostFormValue("mdvalue")
	if raw := strings.TrimSpace(q.r.PostFormValue("mdvalue")); json.Valid([]byte(raw)) {
		value = json.RawMessage(raw)
	}
	n, failures := 0, []string{}
	for _, s := range sel {
		path := q.imagePath(s.User, s.ID) + "/metadata"
		var err error
		if set {
			body, _ := json.Marshal(map[string]any{key: value})
			_, err = q.api.send(ctx, http.MethodPost, path, body, "")
		} else {
			var had bool
			if had, err = q.removeMetadataKey(ctx, path, key); err == nil && !had {
				continue
			}
		}
		if err != nil {
			msg, err := failure(s, err)
			if err != nil {
				return err
			}
			failures = append(failures, msg)
			continue
		}
		n++
	}
	done := "Set " + key + " on"
	if !set {
		done = "Removed " + key + " from"
	}
	return q.finish(back, done, n, failures)
}

// removeTries is how often removeMetadataKey reads again after the
// metadata changed between its read and its write.
const removeTries = 3

// removeMetadataKey drops key from the metadata at path (read, drop, PUT
// with If-Match the ETag read), so a change another client makes between
// the read and the write is not overwritten: the API refuses the write and
// the key is dropped from the changed document instead. had says whether
// the key was there.
func (q *request) removeMetadataKey(ctx context.Context, path, key string) (had bool, err error) {
	for range removeTries {
		r, err := q.api.do(ctx, http.MethodGet, path, nil, nil, "")
		if err != nil {
			return false, err
		}
		if e := r.err(); e != nil {
			return false, e
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			return false, fmt.Errorf("web: metadata of %s: %w", path, err)
		}
		if _, ok := doc[key]; !ok {
			return false, nil
		}
		delete(doc, key)
		body, _ := json.Marshal(doc)
		_, err = q.api.sendIfMatch(ctx, http.MethodPut, path, body, r.Header.Get("ETag"))
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != http.StatusPreconditionFailed {
			return err == nil, err
		}
	}
	return false, &apiError{Status: http.StatusConflict, Message: "its metadata kept changing meanwhile; try again"}
}

// bulkDeleteView asks before the ticked images are deleted.
type bulkDeleteView struct {
	Page   pageView
	Thumbs []thumbView
	Sel    []string
	Back   string
}

// confirmBulkDelete shows what will be deleted, with a count.
func (u *UI) confirmBulkDelete(q *request) error {
	in := q.r.URL.Query()
	sel, err := selection(in["sel"])
	if err != nil {
		return err
	}
	v := bulkDeleteView{Page: q.page("Delete "+countLabel(len(sel))+"?", "images"), Back: q.back(in)}
	for _, s := range sel {
		v.Sel = append(v.Sel, s.value())
		v.Thumbs = append(v.Thumbs, thumbView{User: s.User, ID: s.ID, Src: q.thumbURL(s.User, s.ID),
			Alt: "Image " + shortID(s.ID) + " of " + s.User})
	}
	return q.render(http.StatusOK, bulkDeletePage(v))
}

// bulkDelete deletes the ticked images one by one through the API.
func (u *UI) bulkDelete(q *request) error {
	sel, err := selection(q.r.PostForm["sel"])
	if err != nil {
		return err
	}
	n, failures := 0, []string{}
	for _, s := range sel {
		if _, err := q.api.send(q.r.Context(), http.MethodDelete, q.imagePath(s.User, s.ID), nil, ""); err != nil {
			msg, err := failure(s, err)
			if err != nil {
				return err
			}
			failures = append(failures, msg)
			continue
		}
		n++
	}
	return q.finish(q.back(q.r.PostForm), "Deleted", n, failures)
}
