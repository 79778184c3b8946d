package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"

	"github.com/vitrine/vitrine/e2e/openapiclient"
)

// TestGeneratedClient drives the server with the Go client that
// oapi-codegen generates from api/openapi.yaml with its default options
// (e2e/openapiclient; `make openapi-check` fails when it is stale): upload,
// merge metadata, read it back, list with metadata, fetch a transformed
// image, issue, use and revoke an upload token, upload by URL, and a typed
// 404. Every user key of the metadata, nested values included, must come
// back through the generated types; each exchange is also checked against
// the document (the tests' shared client).
func TestGeneratedClient(t *testing.T) {
	s := startServer(t, `accessControl:
  keys:
    - publicKey: alice
      privateKey: alice-private
      rules:
        - users: [alice]
          group: read-write
    - publicKey: operator
      privateKey: operator-private
      rules:
        - users: "*"
          group: all
quotas:
  images: 100
outbound:
  allow: ["127.0.0.1"]
`)
	byURL := testPNG(t, 30, 20, 11)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(byURL)
	}))
	t.Cleanup(origin.Close)
	c, err := openapiclient.NewClientWithResponses(s.URL, openapiclient.WithHTTPClient(client),
		openapiclient.WithRequestEditorFn(signRequest(key{Public: "alice", Private: "alice-private"})))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// written holds every kind of JSON value, nested; its keys are not in
	// the document, so only a client that keeps free keys returns them.
	written := map[string]any{
		"color":  "red",
		"rating": 4.5,
		"public": true,
		"tags":   []any{"beach", "summer"},
		"camera": map[string]any{"lens": map[string]any{"focal": 35.0, "primes": []any{true, "f/1.8"}}},
	}
	var id string

	t.Run("upload", func(t *testing.T) {
		r, err := c.UploadImageWithBodyWithResponse(ctx, "alice", nil, "image/png", bytes.NewReader(testPNG(t, 64, 48, 7)))
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON201 == nil {
			t.Fatalf("upload: %d %s", r.StatusCode(), r.Body)
		}
		if r.JSON201.Width != 64 || r.JSON201.Height != 48 || r.JSON201.Extension != "png" {
			t.Fatalf("upload answered %+v", *r.JSON201)
		}
		id = r.JSON201.ImageIdentifier
	})
	if id == "" {
		t.FailNow()
	}

	t.Run("merge metadata", func(t *testing.T) {
		r, err := c.MergeMetadataWithResponse(ctx, "alice", id, nil, openapiclient.MergeMetadataJSONRequestBody(written))
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil {
			t.Fatalf("merge: %d %s", r.StatusCode(), r.Body)
		}
		wantMetadata(t, "merge answer", r.JSON200.AdditionalProperties, written)
	})

	t.Run("read metadata", func(t *testing.T) {
		r, err := c.GetMetadataWithResponse(ctx, "alice", id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil {
			t.Fatalf("get metadata: %d %s", r.StatusCode(), r.Body)
		}
		wantMetadata(t, "GET metadata", r.JSON200.AdditionalProperties, written)
	})

	t.Run("list with metadata", func(t *testing.T) {
		withMetadata := "1"
		r, err := c.ListImagesWithResponse(ctx, "alice", &openapiclient.ListImagesParams{Metadata: &withMetadata})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || len(r.JSON200.Images) != 1 {
			t.Fatalf("list: %d %s", r.StatusCode(), r.Body)
		}
		img := r.JSON200.Images[0]
		if img.ImageIdentifier == nil || *img.ImageIdentifier != id || img.Metadata == nil {
			t.Fatalf("listed %s", r.Body)
		}
		wantMetadata(t, "listing", *img.Metadata, written)
	})

	t.Run("transformed image", func(t *testing.T) {
		chain := openapiclient.Transformations{"thumbnail:width=32,height=24", "desaturate"}
		r, err := c.GetImageWithResponse(ctx, "alice", id+".jpg", &openapiclient.GetImageParams{T: &chain})
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() != http.StatusOK || r.Headers200 == nil {
			t.Fatalf("get image: %d %.200s", r.StatusCode(), r.Body)
		}
		if format, w, h := decodeSize(t, "transformed image", r.Body); format != "jpeg" || w != 32 || h != 24 {
			t.Fatalf("got a %dx%d %s, want a 32x24 jpeg", w, h, format)
		}
		if ow := r.Headers200.XServiceOutputWidth; ow == nil || *ow != 32 {
			t.Fatalf("X-Service-OutputWidth = %v, want 32", ow)
		}
	})

	t.Run("quotas", func(t *testing.T) {
		op, err := openapiclient.NewClientWithResponses(s.URL, openapiclient.WithHTTPClient(client),
			openapiclient.WithRequestEditorFn(signRequest(key{Public: "operator", Private: "operator-private"})))
		if err != nil {
			t.Fatal(err)
		}
		images, variants := 2, 0
		r, err := op.PutQuotaWithResponse(ctx, "alice", nil, openapiclient.PutQuotaJSONRequestBody{Images: &images, VariantsPerImage: &variants})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || r.JSON200.Quota.Images != 2 || r.JSON200.Defaults.Images != 100 || r.JSON200.Override.Bytes != nil ||
			r.JSON200.Override.VariantsPerImage == nil || *r.JSON200.Override.VariantsPerImage != 0 || r.JSON200.Updated == nil {
			t.Fatalf("put quota: %d %s", r.StatusCode(), r.Body)
		}
		u, err := c.GetUserWithResponse(ctx, "alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		if u.JSON200 == nil || u.JSON200.Quota.Images != 2 || u.JSON200.Usage.Images != 1 || u.JSON200.Usage.Bytes == 0 {
			t.Fatalf("get user: %d %s", u.StatusCode(), u.Body)
		}
		q, err := c.GetQuotaWithResponse(ctx, "alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		if q.JSON200 == nil || q.JSON200.User != "alice" || q.JSON200.Usage.Images != 1 || *q.JSON200.Override.Images != 2 {
			t.Fatalf("get quota: %d %s", q.StatusCode(), q.Body)
		}
	})

	t.Run("upload token", func(t *testing.T) {
		uploads, formats, origin := 2, []string{"png"}, "https://app.example.com"
		md := openapiclient.JSONObject{"album": "summer"}
		r, err := c.CreateUploadTokenWithResponse(ctx, "alice", nil, openapiclient.CreateUploadTokenJSONRequestBody{
			Uploads: &uploads, Formats: &formats, Metadata: &md, Origin: &origin})
		if err != nil {
			t.Fatal(err)
		}
		tok := r.JSON201
		if tok == nil || tok.Uploads != 2 || !reflect.DeepEqual(tok.Formats, formats) || tok.Metadata["album"] != "summer" ||
			tok.Origin == nil || *tok.Origin != origin || tok.Id == "" || len(tok.Token) != 47 {
			t.Fatalf("token: %d %s", r.StatusCode(), r.Body)
		}
		// The token alone: a client that signs nothing.
		anon, err := openapiclient.NewClientWithResponses(s.URL, openapiclient.WithHTTPClient(client))
		if err != nil {
			t.Fatal(err)
		}
		bearer := func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			return nil
		}
		up, err := anon.UploadImageWithBodyWithResponse(ctx, "alice", nil, "image/png", bytes.NewReader(testPNG(t, 20, 20, 8)), bearer)
		if err != nil || up.JSON201 == nil {
			t.Fatalf("upload with the token: %v %d %s", err, up.StatusCode(), up.Body)
		}
		rv, err := c.RevokeUploadTokenWithResponse(ctx, "alice", tok.Id, nil)
		if err != nil || rv.JSON200 == nil || rv.JSON200.Id != tok.Id {
			t.Fatalf("revoke: %v %d %s", err, rv.StatusCode(), rv.Body)
		}
		up, err = anon.UploadImageWithBodyWithResponse(ctx, "alice", nil, "image/png", bytes.NewReader(testPNG(t, 20, 20, 9)), bearer)
		if err != nil || up.JSON401 == nil || up.JSON401.Error.ServiceErrorCode != 112 {
			t.Fatalf("upload with the revoked token: %v %d %s", err, up.StatusCode(), up.Body)
		}
	})

	t.Run("upload by URL", func(t *testing.T) {
		// For bob, so that alice's quota and listing stay as above.
		op, err := openapiclient.NewClientWithResponses(s.URL, openapiclient.WithHTTPClient(client),
			openapiclient.WithRequestEditorFn(signRequest(key{Public: "operator", Private: "operator-private"})))
		if err != nil {
			t.Fatal(err)
		}
		r, err := op.UploadImageByURLWithResponse(ctx, "bob", nil, openapiclient.UploadImageByURLJSONRequestBody{Url: origin.URL + "/photo.png"})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON201 == nil || r.JSON201.ImageIdentifier != md5Hex(byURL) || r.JSON201.Width != 30 {
			t.Fatalf("upload by URL: %d %s", r.StatusCode(), r.Body)
		}
	})

	t.Run("typed error", func(t *testing.T) {
		r, err := c.GetMetadataWithResponse(ctx, "alice", "0123456789abcdef0123456789abcdef", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON404 == nil || r.JSON404.Error.Code != http.StatusNotFound || r.JSON404.Error.Message == "" {
			t.Fatalf("metadata of a missing image: %d %s", r.StatusCode(), r.Body)
		}
	})
}

// signRequest is the generated client's request editor: writes carry the
// signature headers, reads an access token in the query, both as the
// harness's signWrite and signRead make them.
func signRequest(k key) openapiclient.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			signWrite(req, k)
			return nil
		}
		u, err := url.Parse(signRead(req.URL.String(), k))
		if err != nil {
			return err
		}
		req.URL = u
		return nil
	}
}

// wantMetadata fails unless got holds exactly the keys and values of want,
// compared as decoded JSON.
func wantMetadata(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var norm map[string]any
	if err := json.Unmarshal(b, &norm); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, norm) {
		g, _ := json.Marshal(got)
		t.Fatalf("%s: metadata %s, want %s", what, g, b)
	}
}
