package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAppUploadByURL: the App hands the file's outbound.allow and
// uploads.urlTimeout to ingestion by URL: an image on an allowed loopback
// address is uploaded, another loopback address is refused by the guard,
// and a slow origin times out at the configured bound.
func TestAppUploadByURL(t *testing.T) {
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewNRGBA(image.Rect(0, 0, 12, 9))); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Write(img.Bytes())
	}))
	defer origin.Close()
	defer close(release)
	base := runApp(t, `
accessControl:
  keys:
    - publicKey: ingest
      privateKey: ingest-secret
      rules: [{group: read-write, users: [u]}]
uploads:
  urlTimeout: 500ms
outbound:
  allow: [127.0.0.1]
`)
	post := func(source string) (int, string) {
		t.Helper()
		u := base + "/users/u/images/url"
		body, _ := json.Marshal(map[string]string{"url": source})
		req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
		mac := hmac.New(sha256.New, []byte("ingest-secret"))
		mac.Write([]byte("POST|" + u + "|ingest|" + ts))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Service-PublicKey", "ingest")
		req.Header.Set("X-Service-Authenticate-Timestamp", ts)
		req.Header.Set("X-Service-Authenticate-Signature", hex.EncodeToString(mac.Sum(nil)))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	port := origin.URL[strings.LastIndexByte(origin.URL, ':'):]
	for _, c := range []struct {
		url    string
		status int
		want   string
	}{
		{origin.URL + "/a.png", http.StatusCreated, `"width":12`},
		{"http://127.0.0.2" + port + "/a.png", http.StatusBadRequest, "Refused outbound connection: 127.0.0.2 is a loopback address"},
		{origin.URL + "/slow", http.StatusGatewayTimeout, "(uploads.urlTimeout is 500ms)"},
	} {
		if status, body := post(c.url); status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.url, status, body, c.status, c.want)
		}
	}
}
