package api_test

import (
	"bytes"
	"encoding/json"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
)

func TestCanonicalURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"http://h:8080/users/a/images", "http://h:8080/users/a/images"},
		{"http://h:80/users/a", "http://h/users/a"},
		{"https://h:443/users/a", "https://h/users/a"},
		{"http://h", "http://h/"},
		{"http://h/users/a/images/x.png?t[]=thumbnail:width=10,height=10", "http://h/users/a/images/x.png?t[]=thumbnail:width=10,height=10"},
		{"http://h/users/a/images/x?t%5B%5D=crop%3Awidth%3D5&q=a+b", "http://h/users/a/images/x?t[]=crop:width=5&q=a b"},
		{"http://h/users/a%20b/images?", "http://h/users/a b/images"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := api.CanonicalURL(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("CanonicalURL = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSignURLs(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600))
	const ts = "2024-05-06T06:08:09Z"

	// Reads: publicKey only when the key is not named like the path user.
	for _, tt := range []struct{ in, pub, want string }{
		{"http://h/users/a/images", "a", "http://h/users/a/images?accessToken=" + hmacHex("k", "http://h/users/a/images")},
		{"http://h/users/a/images?", "v", "http://h/users/a/images?publicKey=v&accessToken=" +
			hmacHex("k", "http://h/users/a/images?publicKey=v")},
		{"http://h", "v", "http://h?publicKey=v&accessToken=" + hmacHex("k", "http://h/?publicKey=v")},
		{"http://h/users/a?publicKey=v", "v", "http://h/users/a?publicKey=v&accessToken=" +
			hmacHex("k", "http://h/users/a?publicKey=v")},
	} {
		got, err := api.SignRead(tt.in, tt.pub, "k")
		if err != nil || got != tt.want {
			t.Errorf("SignRead(%q, %q) = %q, %v; want %q", tt.in, tt.pub, got, err, tt.want)
		}
	}
	if user, err := api.SignURLUser("http://h/users/alice.json"); err != nil || user != "alice" {
		t.Errorf("SignURLUser = %q, %v; want alice", user, err)
	}
	if user, err := api.SignURLUser("http://h/status"); err != nil || user != "" {
		t.Errorf("SignURLUser without a user = %q, %v", user, err)
	}

	// Writes: headers over the URL as given, the query form over the URL
	// with publicKey.
	s, err := api.SignWrite(http.MethodPut, "http://h:80/users/a/images/x/metadata", "v", "k", now)
	if err != nil {
		t.Fatal(err)
	}
	want := api.WriteSignature{URL: "http://h:80/users/a/images/x/metadata", PublicKey: "v", Timestamp: ts,
		Signature: hmacHex("k", "PUT|http://h/users/a/images/x/metadata|v|"+ts)}
	if s != want {
		t.Errorf("SignWrite = %+v, want %+v", s, want)
	}
	wantHeaders := []api.HeaderField{{"X-Service-PublicKey", "v"}, {"X-Service-Authenticate-Timestamp", ts},
		{"X-Service-Authenticate-Signature", want.Signature}}
	if got := s.Headers(); len(got) != 3 || got[0] != wantHeaders[0] || got[1] != wantHeaders[1] || got[2] != wantHeaders[2] {
		t.Errorf("Headers = %+v, want %+v", got, wantHeaders)
	}
	q, err := api.SignWriteQuery(http.MethodDelete, "http://h/users/a/images/x", "v", "k", now)
	wantQ := "http://h/users/a/images/x?publicKey=v&signature=" +
		hmacHex("k", "DELETE|http://h/users/a/images/x?publicKey=v|v|"+ts) + "&timestamp=2024-05-06T06%3A08%3A09Z"
	if err != nil || q != wantQ {
		t.Errorf("SignWriteQuery = %q, %v; want %q", q, err, wantQ)
	}

	for _, tt := range []struct{ name, url, errPart string }{
		{"relative", "/users/a", "want an absolute http:// or https:// URL"},
		{"other scheme", "ftp://h/users/a", "want an absolute http:// or https:// URL"},
		{"fragment", "http://h/users/a#x", "has a fragment"},
		{"token", "http://h/users/a?accessToken=1", "is signed already"},
		{"signature", "http://h/users/a?signature=1", "is signed already"},
		{"other publicKey", "http://h/users/a?publicKey=w", `names publicKey "w", not "v"`},
	} {
		if _, err := api.SignRead(tt.url, "v", "k"); err == nil || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("%s: SignRead error %v, want %q", tt.name, err, tt.errPart)
		}
		if _, err := api.SignWriteQuery(http.MethodPost, tt.url, "v", "k", now); err == nil || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("%s: SignWriteQuery error %v, want %q", tt.name, err, tt.errPart)
		}
	}
	if _, err := api.SignWrite(http.MethodGet, "http://h/users/a", "a", "k", now); err == nil {
		t.Error("SignWrite signed a GET")
	}
}

// TestSignRoundTrip sends requests signed by SignRead, SignWrite and
// SignWriteQuery to a running server: it must accept them, and refuse them
// under a wrong private key.
func TestSignRoundTrip(t *testing.T) {
	e := newEnv(t, testConfig())

	// An upload signed with headers.
	s, err := api.SignWrite(http.MethodPost, e.url+"/users/alice/images", userKey, userPriv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	res := e.request(http.MethodPost, e.url+"/users/alice/images", pngImage(t, 40, 30, 1), headerPairs(s)...)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("signed upload: %s %s", res.Status, res.body)
	}
	var up struct{ ImageIdentifier string }
	if err := json.Unmarshal(res.body, &up); err != nil || up.ImageIdentifier == "" {
		t.Fatalf("upload answer %s: %v", res.body, err)
	}
	img := e.url + "/users/alice/images/" + up.ImageIdentifier

	// Reads: a transformation query, the key named like the user or not.
	thumb := img + ".png?t[]=thumbnail:width=10,height=10"
	for _, tt := range []struct {
		name, pub, priv string
		wantStatus      int
	}{
		{"user key", userKey, userPriv, http.StatusOK},
		{"other key", roKey, roPriv, http.StatusOK},
		{"wrong private key", userKey, roPriv, http.StatusBadRequest},
	} {
		t.Run("get "+tt.name, func(t *testing.T) {
			u, err := api.SignRead(thumb, tt.pub, tt.priv)
			if err != nil {
				t.Fatal(err)
			}
			if tt.pub != userKey && !strings.Contains(u, "publicKey="+tt.pub) {
				t.Errorf("signed URL %s lacks publicKey", u)
			}
			res := e.get(u)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("GET %s: %s %s", u, res.Status, res.body)
			}
			if tt.wantStatus != http.StatusOK {
				return
			}
			m, err := png.Decode(bytes.NewReader(res.body))
			if err != nil {
				t.Fatal(err)
			}
			if b := m.Bounds(); b.Dx() > 10 || b.Dy() > 10 {
				t.Errorf("thumbnail is %dx%d, want within 10x10", b.Dx(), b.Dy())
			}
		})
	}

	// Metadata written with headers.
	meta := img + "/metadata"
	if s, err = api.SignWrite(http.MethodPut, meta, userKey, userPriv, time.Now()); err != nil {
		t.Fatal(err)
	}
	if res := e.request(http.MethodPut, meta, []byte(`{"title":"test"}`), headerPairs(s)...); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT metadata: %s %s", res.Status, res.body)
	}

	// Deletes signed in the query: a wrong private key fails, the right one
	// works, also for a key not named like the user.
	u, err := api.SignWriteQuery(http.MethodDelete, meta, userKey, roPriv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res := e.request(http.MethodDelete, u, nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("DELETE with a wrong private key: %s %s", res.Status, res.body)
	}
	if u, err = api.SignWriteQuery(http.MethodDelete, meta, adminKey, adminPriv, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(u, "publicKey=admin") || !strings.Contains(u, "signature=") || !strings.Contains(u, "timestamp=") {
		t.Errorf("query form lacks publicKey, signature or timestamp: %s", u)
	}
	if res := e.request(http.MethodDelete, u, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE metadata with the query form: %s %s", res.Status, res.body)
	}
	if u, err = api.SignWriteQuery(http.MethodDelete, img, userKey, userPriv, time.Now()); err != nil {
		t.Fatal(err)
	}
	if res := e.request(http.MethodDelete, u, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE image with the query form: %s %s", res.Status, res.body)
	}
}

// headerPairs flattens a signature's headers for env.request.
func headerPairs(s api.WriteSignature) []string {
	var out []string
	for _, h := range s.Headers() {
		out = append(out, h.Name, h.Value)
	}
	return out
}

// TestSignEncodes: a URL written the way a person types it (a space,
// `t[]`) comes back percent-encoded, so that curl sends it as printed, and
// the server accepts its token; one already encoded is left as it is.
func TestSignEncodes(t *testing.T) {
	e := newEnv(t, testConfig())
	img := e.url + "/users/alice/images/" + e.upload(pngImage(t, 40, 30, 5))
	for _, tt := range []struct{ name, in, want string }{
		{"space and brackets", img + ".png?t[]=text:text=Hello world&t[]=thumbnail:width=10,height=10",
			img + ".png?t%5B%5D=text:text=Hello%20world&t%5B%5D=thumbnail:width=10,height=10"},
		{"encoded already", img + ".png?t%5B%5D=text:text=Hello+world%21",
			img + ".png?t%5B%5D=text:text=Hello+world%21"},
		{"bare percent and non-ASCII", img + ".png?t[]=text:text=100% sûr",
			img + ".png?t%5B%5D=text:text=100%25%20s%C3%BBr"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, err := api.SignRead(tt.in, userKey, userPriv)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := strings.Cut(u, "&accessToken=")
			if got != tt.want {
				t.Errorf("SignRead printed %s, want %s", got, tt.want)
			}
			if res := e.get(u); res.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %s %s", u, res.Status, res.body)
			}
			s, err := api.SignWrite(http.MethodPost, tt.in, userKey, userPriv, time.Now())
			if err != nil || s.URL != tt.want {
				t.Errorf("SignWrite URL %q, %v; want %q", s.URL, err, tt.want)
			}
		})
	}
}
