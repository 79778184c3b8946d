package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// imageView is one image: properties, original headers, metadata editor,
// short URLs and deletion.
type imageView struct {
	Page     pageView
	User, ID string
	Preview  string
	Original string
	// Video is the original's URL when the image is a video: the page
	// plays it, its poster the preview.
	Video         string
	Props         []kv
	Headers       []kv
	HeadersNote   string
	Metadata      string
	MetadataError string
	MetadataNote  string
	Short         *shortURLView // the one just created or looked up
	ShortFind     string        // what was looked up: an id or a short URL
	ShortFindErr  string
	ShortQuery    string
	ShortExt      string
	ShortError    string
	// ShortURLs lists every short URL of the image; ShortListNote says why
	// the key may not see them.
	ShortURLs     []shortURLView
	ShortListNote string
	// Variants are the image's cached transformed outputs; VariantsNote
	// says why they are not shown.
	Variants     []variantView
	VariantsNote string
	Base         string // this page's path
	// Analysis is what the analysis at upload learnt, with the original's
	// EXIF; Similar are the nearest images by perceptual hash.
	Analysis *analysisView
	Similar  []thumbView
	// What the key may do with the image.
	CanEditMetadata, CanShorten, CanDeleteShort, CanDelete bool
	// CanBlock offers the blocklist's form for this image (BlockHref).
	CanBlock  bool
	BlockHref string
}

type kv struct{ Key, Value string }

// shortURLView is one short URL of the image.
type shortURLView struct {
	ID, URL, Query, Extension string
}

func (q *request) imagePath(user, id string) string {
	return "/users/" + url.PathEscape(user) + "/images/" + url.PathEscape(id)
}

// loadImage fills the parts of the image page that come from the API.
func (q *request) loadImage(v *imageView) error {
	ctx := q.r.Context()
	if !validName(v.User) {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("user", v.User, "")}
	}
	apiPath := q.imagePath(v.User, v.ID)
	v.Base = q.path(apiPath)
	v.CanEditMetadata, v.CanDelete = q.may("metadata.put", v.User), q.may("image.delete", v.User)
	v.CanBlock = q.mayAny("blocklist.post")
	v.BlockHref = q.path("/blocklist") + "?" + url.Values{"user": {v.User}, "image": {v.ID}}.Encode() + "#add-image"
	v.CanShorten, v.CanDeleteShort = q.may("shorturls.post", v.User), q.may("shorturl.delete", v.User)
	l, err := q.list(ctx, "/users/"+url.PathEscape(v.User)+"/images", url.Values{"ids[]": {v.ID}})
	if err != nil {
		return notFoundAs(err, noSuch("user", v.User, ", so no image "+v.ID+" of it"))
	}
	if len(l.Images) == 0 {
		return &apiError{Status: http.StatusNotFound, Message: "User " + v.User + " has no image " + v.ID + "."}
	}
	im := l.Images[0]
	v.Props = []kv{{"User", im.User}, {"Identifier", im.ID}, {"Type", im.Mime}, {"Dimensions", itoa(im.Width) + " × " + itoa(im.Height) + " px"},
		{"Size", humanBytes(im.Size)}, {"Checksum (MD5)", im.Checksum}, {"Original checksum", orDash(im.OriginalChecksum)},
		{"Added", im.Added}, {"Updated", im.Updated}}
	v.Preview = q.api.signedURL(apiPath+".webp", url.Values{"t[]": {"maxSize:width=960,height=960"}})
	v.Original = q.api.signedURL(apiPath+"."+im.Extension, nil)
	if vid := im.Video; vid != nil {
		v.Video = v.Original
		v.Props = append(v.Props, kv{"Duration", strconv.FormatFloat(vid.Duration, 'f', 2, 64) + " s"},
			kv{"Frame rate", strconv.FormatFloat(vid.FPS, 'f', -1, 64) + " fps"}, kv{"Codec", vid.Codec})
	}
	r, err := q.api.headOriginal(ctx, apiPath)
	if err != nil {
		return err
	}
	if e := r.err(); e != nil {
		v.HeadersNote = "The service did not serve the original (" + itoa(e.Status) + "): " + e.Message
		r.Header = nil
	}
	for k, vals := range r.Header {
		v.Headers = append(v.Headers, kv{k, strings.Join(vals, ", ")})
		if strings.HasSuffix(k, "-Originalframes") && len(vals) > 0 {
			v.Props = append(v.Props[:4], append([]kv{{"Frames", framesLabel(vals[0])}}, v.Props[4:]...)...)
		}
	}
	sort.Slice(v.Headers, func(i, j int) bool { return v.Headers[i].Key < v.Headers[j].Key })
	if err := q.loadShortURLs(ctx, v); err != nil {
		return err
	}
	if err := q.loadVariants(ctx, v); err != nil {
		return err
	}
	var md json.RawMessage
	note := ""
	if err := q.api.getJSON(ctx, apiPath+"/metadata", nil, &md); err != nil {
		msg, denied := denial(err)
		if !denied {
			return err
		}
		md, note = nil, "Your key may not read this image's metadata: "+msg
		if v.Metadata == "" {
			v.MetadataNote = note
		}
	} else if pretty, err := prettyJSON(md); err == nil && v.Metadata == "" {
		v.Metadata = pretty
	}
	v.Analysis = analysis(im, md, note)
	if err := q.loadSimilar(ctx, v, im); err != nil {
		return err
	}
	return nil
}

func (u *UI) image(q *request) error {
	v := imageView{User: q.r.PathValue("user"), ID: q.r.PathValue("image"), ShortExt: "jpg"}
	v.Page = q.page("Image "+shortID(v.ID), "images")
	switch q.r.URL.Query().Get("done") {
	case "metadata":
		v.Page.Notice = "Metadata saved."
	case "shorturl":
		v.Page.Notice = "Short URL created."
	case "shorturl-existed":
		v.Page.Notice = "This image already had a short URL with these transformations and format; here it is."
	case "shorturl-deleted":
		v.Page.Notice = "Short URL " + q.r.URL.Query().Get("id") + " deleted."
	}
	status := http.StatusOK
	if find := strings.TrimSpace(q.r.URL.Query().Get("short")); find != "" {
		var err error
		if status, err = q.findShortURL(&v, find); err != nil {
			return err
		}
	}
	if err := q.loadImage(&v); err != nil {
		return err
	}
	return q.render(status, imagePage(v))
}

// findShortURL looks up a short URL of the image by its id or address
// (…/s/<id>) and shows it, or says next to the field why it cannot.
func (q *request) findShortURL(v *imageView, find string) (int, error) {
	id := find
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	id, _, _ = strings.Cut(id, "?")
	var got api.ShortURL
	err := q.api.getJSON(q.r.Context(), q.imagePath(v.User, v.ID)+"/shorturls/"+url.PathEscape(id), nil, &got)
	var ae *apiError
	switch {
	case err == nil:
		sv := &shortURLView{ID: id, URL: q.api.base + "/s/" + id, Extension: "none (content negotiation)"}
		if got.Extension != nil {
			sv.Extension = *got.Extension
		}
		sv.Query = shortQuery(got.Query.T)
		v.Short = sv
		return http.StatusOK, nil
	case errors.As(err, &ae) && ae.denied():
		v.ShortFind, v.ShortFindErr = find, "Your key may not read this image's short URLs: "+ae.Message
		return http.StatusForbidden, nil
	case errors.As(err, &ae) && ae.Status < 500:
		v.ShortFind, v.ShortFindErr = find, "No short URL "+id+" leads to this image. A short URL's id is the 7 letters and digits after /s/."
		return http.StatusNotFound, nil
	}
	return 0, err
}

// saveMetadata replaces the metadata with the posted JSON. The API
// validates it; its message is shown next to the field.
func (u *UI) saveMetadata(q *request) error {
	v := imageView{User: q.r.PathValue("user"), ID: q.r.PathValue("image"), ShortExt: "jpg"}
	v.Page = q.page("Image "+shortID(v.ID), "images")
	doc := q.r.PostFormValue("metadata")
	_, err := q.api.send(q.r.Context(), http.MethodPut, q.imagePath(v.User, v.ID)+"/metadata", []byte(doc), "application/json")
	if err == nil {
		return q.redirect(q.imagePath(v.User, v.ID) + "?done=metadata")
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status >= 500 {
		return err
	}
	v.Metadata, v.MetadataError = doc, ae.Message
	if ae.denied() {
		// The form is not offered to such a key; this post came anyway.
		v.Metadata, v.MetadataError = "", ""
		v.MetadataNote = "Your key may not change this image's metadata: " + ae.Message
	}
	if err := q.loadImage(&v); err != nil {
		return err
	}
	return q.render(ae.formStatus(), imagePage(v))
}

// createShortURL asks the API for a short URL of the image with the
// posted transformations and extension.
func (u *UI) createShortURL(q *request) error {
	v := imageView{User: q.r.PathValue("user"), ID: q.r.PathValue("image"),
		ShortQuery: strings.TrimSpace(q.r.PostFormValue("query")), ShortExt: q.r.PostFormValue("extension")}
	v.Page = q.page("Image "+shortID(v.ID), "images")
	body, _ := json.Marshal(map[string]string{"user": v.User, "imageIdentifier": v.ID, "extension": v.ShortExt,
		"query": v.ShortQuery})
	r, err := q.api.send(q.r.Context(), http.MethodPost, q.imagePath(v.User, v.ID)+"/shorturls", body, "")
	var ae *apiError
	switch {
	case err == nil:
		var got struct{ ID string }
		if err := r.decode(&got); err != nil {
			return err
		}
		if got.ID == "" {
			return errors.New("web: the API's answer names no short URL")
		}
		done := "shorturl"
		if r.Status == http.StatusOK {
			done = "shorturl-existed"
		}
		return q.redirect(q.imagePath(v.User, v.ID) + "?" + url.Values{"done": {done}, "short": {got.ID}}.Encode())
	case errors.As(err, &ae) && ae.Status < 500:
		v.ShortError = ae.Message
	default:
		return err
	}
	if err := q.loadImage(&v); err != nil {
		return err
	}
	return q.render(ae.formStatus(), imagePage(v))
}

// deleteShortURL deletes one short URL of the image; an unknown id is
// said next to the short URL field.
func (u *UI) deleteShortURL(q *request) error {
	user, image := q.r.PathValue("user"), q.r.PathValue("image")
	id := strings.TrimSpace(q.r.PostFormValue("id"))
	_, err := q.api.send(q.r.Context(), http.MethodDelete, q.imagePath(user, image)+"/shorturls/"+url.PathEscape(id), nil, "")
	var ae *apiError
	if err == nil {
		return q.redirect(q.shortURLDeleted(user, image, id))
	} else if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		return err
	}
	v := imageView{User: user, ID: image, ShortExt: "jpg", ShortFind: id,
		ShortFindErr: "No short URL " + id + " leads to this image; it may have been deleted already."}
	v.Page = q.page("Image "+shortID(image), "images")
	if err := q.loadImage(&v); err != nil {
		return err
	}
	return q.render(http.StatusNotFound, imagePage(v))
}

// confirmView asks before an image is deleted.
type confirmView struct {
	Page     pageView
	User, ID string
	Thumb    string
	Action   string
	Cancel   string
}

func (u *UI) confirmDelete(q *request) error {
	user, id := q.r.PathValue("user"), q.r.PathValue("image")
	v := confirmView{Page: q.page("Delete image "+shortID(id)+"?", "images"), User: user, ID: id,
		Thumb: q.thumbURL(user, id), Action: q.path(q.imagePath(user, id) + "/delete"), Cancel: q.path(q.imagePath(user, id))}
	return q.render(http.StatusOK, confirmDeletePage(v))
}

func (u *UI) deleteImage(q *request) error {
	user, id := q.r.PathValue("user"), q.r.PathValue("image")
	if _, err := q.api.send(q.r.Context(), http.MethodDelete, q.imagePath(user, id), nil, ""); err != nil {
		return err
	}
	return q.redirect("/users/" + url.PathEscape(user) + "?deleted=" + url.QueryEscape(id))
}

// framesLabel says whether an image is still or animated.
func framesLabel(n string) string {
	if n == "1" {
		return "1 (still image)"
	}
	return n + " (animation)"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func deleteHint(canDelete bool) string {
	if canDelete {
		return " and delete it"
	}
	return ""
}
