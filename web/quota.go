package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// quotaView is a user's quotas beside what the user stores, on the user's
// page (GET /users/{user}/quota), with the form that sets the user's own
// quotas for keys holding quota.put.
type quotaView struct {
	Rows []quotaRow
	// Beside says what the user stores that the quotas do not count
	// (cached variants, stored variations).
	Beside  string
	CanEdit bool
	Action  string
	// Images, Bytes and VariantsPerImage are the form's fields: the
	// user's own quotas, empty where the default holds.
	Images, Bytes, VariantsPerImage string
	Defaults                        api.Quotas
	Error                           string
}

// quotaRow is one quota: what is used of it and its limit.
type quotaRow struct {
	Label, Used, Limit string
	// Value and Max feed a meter; Max is 0 for an unlimited quota.
	Value, Max int64
	// Own is set where the user's own quota replaces the default.
	Own bool
}

// loadQuota fills v.Quota when the key may read the user's quotas; the
// form's fields keep what was posted when form is set.
func (q *request) loadQuota(v *imagesView, form *quotaView) error {
	if !q.may("quota.get", v.User) {
		return nil
	}
	var uq api.UserQuota
	err := q.api.getJSON(q.r.Context(), "/users/"+url.PathEscape(v.User)+"/quota", nil, &uq)
	if _, denied := denial(err); denied {
		return nil
	} else if err != nil {
		return err
	}
	qv := &quotaView{Defaults: uq.Defaults, CanEdit: q.may("quota.put", v.User),
		Action: q.path("/users/" + url.PathEscape(v.User) + "/quota")}
	u := uq.Usage
	qv.Rows = []quotaRow{
		{Label: "Images", Used: strconv.FormatInt(u.Images, 10), Limit: limitLabel(uq.Quota.Images, strconv.FormatInt(uq.Quota.Images, 10)),
			Value: u.Images, Max: uq.Quota.Images, Own: uq.Override.Images != nil},
		{Label: "Bytes of originals", Used: humanBytes(u.Bytes), Limit: limitLabel(uq.Quota.Bytes, humanBytes(uq.Quota.Bytes)),
			Value: u.Bytes, Max: uq.Quota.Bytes, Own: uq.Override.Bytes != nil},
		{Label: "Cached variants per image", Used: strconv.FormatInt(u.MaxVariantsPerImage, 10),
			Limit: limitLabel(uq.Quota.VariantsPerImage, strconv.FormatInt(uq.Quota.VariantsPerImage, 10)),
			Value: u.MaxVariantsPerImage, Max: uq.Quota.VariantsPerImage, Own: uq.Override.VariantsPerImage != nil},
	}
	qv.Beside = fmt.Sprintf("Variants per image: those of the image with the most. Not counted: %d cached variants (%s), %d stored variations (%s).",
		u.Variants, humanBytes(u.VariantBytes), u.Variations, humanBytes(u.VariationBytes))
	if form != nil {
		qv.Images, qv.Bytes, qv.VariantsPerImage, qv.Error = form.Images, form.Bytes, form.VariantsPerImage, form.Error
	} else {
		qv.Images, qv.Bytes, qv.VariantsPerImage = ownField(uq.Override.Images), ownField(uq.Override.Bytes), ownField(uq.Override.VariantsPerImage)
	}
	v.Quota = qv
	return nil
}

// limitLabel is a limit as the page shows it: "unlimited" for 0.
func limitLabel(n int64, label string) string {
	if n == 0 {
		return "unlimited"
	}
	return label
}

// ownField is a form field of the user's own quota: empty for the default.
func ownField(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

// saveQuota sets the user's own quotas from the form (an empty field is
// the default) through PUT /users/{user}/quota; the API checks them and
// its refusal is shown next to the form.
func (u *UI) saveQuota(q *request) error {
	user := q.r.PathValue("user")
	if !validName(user) {
		return &apiError{Status: http.StatusNotFound, Message: noSuch("user", user, "")}
	}
	form := &quotaView{Images: strings.TrimSpace(q.r.PostFormValue("images")), Bytes: strings.TrimSpace(q.r.PostFormValue("bytes")),
		VariantsPerImage: strings.TrimSpace(q.r.PostFormValue("variantsPerImage"))}
	body := map[string]any{}
	for name, raw := range map[string]string{"images": form.Images, "bytes": form.Bytes, "variantsPerImage": form.VariantsPerImage} {
		switch n, err := strconv.ParseInt(raw, 10, 64); {
		case raw == "":
			body[name] = nil
		case err == nil:
			body[name] = n
		default:
			body[name] = raw // the API says what is wrong with it
		}
	}
	b, _ := json.Marshal(body)
	path := "/users/" + url.PathEscape(user)
	_, err := q.api.send(q.r.Context(), http.MethodPut, path+"/quota", b, "")
	if err == nil {
		return q.redirect(path + "?done=quota")
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status >= 500 {
		return err
	}
	form.Error = ae.Message
	return u.renderImages(q, user, ae.formStatus(), form)
}

// quotaDefault is a default quota as the form's placeholder says it.
func quotaDefault(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}
