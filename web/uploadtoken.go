package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// Resumable uploads from the upload page. The browser uploads with tus
// (assets/tus.min.js, tus-js-client) straight to the API's
// /users/<user>/uploads, authorised by an upload token that this handler
// asks the API for with the signed-in key: the session's private key never
// reaches the page, and the token uploads only the files of this batch,
// only for this user, for a few minutes. When the API takes no resumable
// uploads or the key may not issue tokens, the page sends each file whole
// through POST /upload instead and says why.

// maxTokenFiles is the most files one token is asked for (the API's own
// bound on a token's uploads is larger).
const maxTokenFiles = 1000

// uploadSession is what the page gets to upload a batch with tus, or
// Fallback, the reason it sends the files whole instead.
type uploadSession struct {
	// UploadToken is the API's answer: the token and its policy.
	*api.UploadToken
	Endpoint string `json:"endpoint,omitempty"`
	Fallback string `json:"fallback,omitempty"`
	Error    string `json:"error,omitempty"`
}

// uploadToken answers POST /upload/token (user, files: how many) with an
// upload token for that user and that many uploads.
func (u *UI) uploadToken(q *request) error {
	user := strings.TrimSpace(q.r.PostFormValue("user"))
	n, err := strconv.Atoi(q.r.PostFormValue("files"))
	switch {
	case user == "":
		return q.writeJSON(http.StatusBadRequest, uploadSession{Error: "Name the user the images are for."})
	case !validName(user):
		return q.writeJSON(http.StatusBadRequest, uploadSession{Error: "A user name is 1 to 64 letters, digits, - and _; " + user + " is not."})
	case err != nil || n < 1 || n > maxTokenFiles:
		return q.writeJSON(http.StatusBadRequest, uploadSession{
			Error: "files must be the number of files to upload, from 1 to " + strconv.Itoa(maxTokenFiles) + "."})
	}
	endpoint := "/users/" + url.PathEscape(user) + "/uploads"
	// Does the API take tus uploads at all? Its OPTIONS answer says so with
	// Tus-Version (tus 1.0, the discovery request).
	probe, err := q.api.request(q.r.Context(), http.MethodOptions, endpoint, nil, nil, "", "")
	if err != nil {
		return err
	}
	if !strings.Contains(probe.Header.Get("Tus-Version"), "1.0.0") {
		return q.writeJSON(http.StatusOK, uploadSession{
			Fallback: "This server takes no resumable uploads; each file is sent whole instead."})
	}
	body, _ := json.Marshal(api.UploadTokenRequest{Uploads: &n})
	r, err := q.api.send(q.r.Context(), http.MethodPost, "/users/"+url.PathEscape(user)+"/uploadtokens", body, "")
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.denied():
		return q.writeJSON(http.StatusOK, uploadSession{
			Fallback: "Your key may not issue upload tokens for " + user + " (" + ae.Message + "), so the files are sent whole, " +
				"without resuming: an interrupted file starts again."})
	case errors.As(err, &ae) && ae.Status < 500:
		return q.writeJSON(ae.Status, uploadSession{Error: ae.Message})
	case err != nil:
		return err
	}
	var t api.UploadToken
	if err := json.Unmarshal(r.Body, &t); err != nil || t.Token == "" {
		return errors.New("web: the API answered an upload token request without a token")
	}
	return q.writeJSON(http.StatusOK, uploadSession{UploadToken: &t, Endpoint: endpoint})
}

// writeJSON answers with v as JSON.
func (q *request) writeJSON(status int, v any) error {
	q.w.Header().Set("Content-Type", "application/json")
	q.w.WriteHeader(status)
	return json.NewEncoder(q.w).Encode(v)
}
