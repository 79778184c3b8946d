package api_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	_ "image/gif"
	"image/png"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

func TestIndexStatusStats(t *testing.T) {
	e := newEnv(t, testConfig())
	r := e.get(e.url + "/")
	if r.StatusCode != 200 || r.json(t)["site"] == nil || r.Header.Get("Cache-Control") != "max-age=0, no-store, private" {
		t.Fatalf("index: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	r = e.get(e.url + "/status.json")
	m := r.json(t)
	if r.StatusCode != 200 || m["database"] != true || m["storage"] != true || m["date"] != m["timestamp"] {
		t.Fatalf("status: %d %s", r.StatusCode, r.body)
	}
	e.upload(pngImage(t, 10, 10, 1))
	r = e.get(e.url + "/stats")
	m = r.json(t)
	if r.StatusCode != 200 || m["numImages"] != 1.0 || m["numUsers"] != 1.0 {
		t.Fatalf("stats: %d %s", r.StatusCode, r.body)
	}
	if total := m["total"].(map[string]any); total["numImages"] != 1.0 {
		t.Fatalf("stats total: %s", r.body)
	}
	if r := e.request(http.MethodPost, e.url+"/", nil); r.StatusCode != 405 || r.Header.Get("Allow") == "" {
		t.Fatalf("POST /: %d %v", r.StatusCode, r.Header)
	}
	if r := e.request("BREW", e.url+"/", nil); r.StatusCode != 418 {
		t.Fatalf("BREW: %d", r.StatusCode)
	}
	if r := e.request("PROPFIND", e.url+"/", nil); r.StatusCode != 501 || !strings.Contains(r.errMessage(t), "PROPFIND") {
		t.Fatalf("PROPFIND: %d %s", r.StatusCode, r.body)
	}
	// PATCH is a method the service knows (resumable uploads), so on a
	// route that does not serve it, it is 405 with Allow.
	if r := e.request("PATCH", e.url+"/", nil); r.StatusCode != 405 || r.Header.Get("Allow") == "" {
		t.Fatalf("PATCH /: %d %v", r.StatusCode, r.Header)
	}
	if r := e.get(e.url + "/nope"); r.StatusCode != 404 || r.errMessage(t) != "Not Found" {
		t.Fatalf("unknown path: %d %s", r.StatusCode, r.body)
	}
}

func TestStatsAllowList(t *testing.T) {
	cfg := testConfig()
	cfg.StatsAllow = []string{"10.0.0.0/8"}
	e := newEnv(t, cfg)
	if r := e.get(e.url + "/stats"); r.StatusCode != 403 || r.errMessage(t) != "Access denied" {
		t.Fatalf("stats from loopback outside allow-list: %d %s", r.StatusCode, r.body)
	}
	cfg.TrustedProxies = []string{"127.0.0.1"}
	e = newEnv(t, cfg)
	if r := e.get(e.url+"/stats", "X-Forwarded-For", "10.1.2.3"); r.StatusCode != 200 {
		t.Fatalf("stats via trusted proxy: %d %s", r.StatusCode, r.body)
	}
}

func TestIndexRedirect(t *testing.T) {
	cfg := testConfig()
	cfg.IndexRedirect = "https://example.org/"
	e := newEnv(t, cfg)
	req, _ := http.NewRequest(http.MethodGet, e.url+"/", nil)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 307 || res.Header.Get("Location") != "https://example.org/" {
		t.Fatalf("redirect: %d %v", res.StatusCode, res.Header)
	}
}

func TestSignedWrites(t *testing.T) {
	e := newEnv(t, testConfig())
	img := pngImage(t, 8, 8, 2)
	now := time.Now().UTC()
	u := e.url + "/users/alice/images"
	ts := now.Format("2006-01-02T15:04:05Z")
	good := hmacHex(userPriv, "POST|"+u+"|alice|"+ts)
	cases := []struct {
		name    string
		headers []string
		url     string
		status  int
		code    float64
		msg     string
	}{
		{"missing timestamp", nil, u, 400, 101, "Missing authentication timestamp: "},
		{"invalid timestamp", []string{"X-Service-Authenticate-Timestamp", "yesterday"}, u, 400, 102, "Invalid timestamp: yesterday; "},
		{"expired", []string{"X-Service-Authenticate-Timestamp", now.Add(-3 * time.Minute).Format("2006-01-02T15:04:05Z")}, u, 400, 104, ""},
		{"future", []string{"X-Service-Authenticate-Timestamp", now.Add(3 * time.Minute).Format("2006-01-02T15:04:05Z")}, u, 400, 104, ""},
		{"missing signature", []string{"X-Service-Authenticate-Timestamp", ts}, u, 400, 101, "Missing authentication signature: "},
		{"mismatch", []string{"X-Service-Authenticate-Timestamp", ts, "X-Service-Authenticate-Signature", strings.Repeat("0", 64)}, u, 400, 103, "Signature mismatch: "},
		{"imbo prefix", []string{"X-Imbo-Authenticate-Timestamp", ts, "X-Imbo-Authenticate-Signature", good}, u, 201, 0, ""},
		{"query parameters", nil, u + "?signature=" + hmacHex(userPriv, "POST|"+u+"|alice|"+ts) + "&timestamp=" + ts, 200, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.request(http.MethodPost, c.url, img, c.headers...)
			if r.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", r.StatusCode, c.status, r.body)
			}
			if c.status >= 400 {
				body := r.json(t)["error"].(map[string]any)
				if body["serviceErrorCode"] != c.code {
					t.Fatalf("code %v, want %v", body["serviceErrorCode"], c.code)
				}
				if msg, _ := body["message"].(string); !strings.HasPrefix(msg, c.msg) {
					t.Fatalf("message %q, want it to start with %q", msg, c.msg)
				}
				if r.Header.Get("X-Service-Error-Message") != body["message"] || r.Header.Get("X-Service-Error-InternalCode") == "" {
					t.Fatalf("error headers: %v", r.Header)
				}
			}
		})
	}
	// A read-only key may not write; an unknown key fails before the signature.
	if r := e.signed(http.MethodPost, "/users/alice/images", roKey, roPriv, img); r.StatusCode != 400 ||
		!strings.HasPrefix(r.errMessage(t), `Permission denied (public key): the access rules of key "reader" do not grant images.post on user "alice"`) {
		t.Fatalf("read-only write: %d %s", r.StatusCode, r.body)
	}
	if r := e.signed(http.MethodPost, "/users/alice/images", "mallory", "x", img); r.StatusCode != 400 ||
		!strings.HasPrefix(r.errMessage(t), `Permission denied (public key): unknown public key "mallory" (X-Service-PublicKey)`) {
		t.Fatalf("unknown key: %d %s", r.StatusCode, r.body)
	}
}

func TestAccessTokens(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 20, 10, 3))
	path := "/users/alice/images/" + id
	if r := e.get(e.url + path); r.StatusCode != 400 || !strings.HasPrefix(r.errMessage(t), "Missing access token: ") {
		t.Fatalf("no token: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(e.url + path + "?accessToken=" + strings.Repeat("a", 64)); r.StatusCode != 400 || !strings.HasPrefix(r.errMessage(t), "Incorrect access token: ") {
		t.Fatalf("wrong token: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(e.tokenURL(path, userPriv)); r.StatusCode != 200 {
		t.Fatalf("good token: %d %s", r.StatusCode, r.body)
	}
	// A different key adds publicKey to the query before signing.
	if r := e.get(e.tokenURL(path+"?publicKey="+roKey, roPriv)); r.StatusCode != 200 {
		t.Fatalf("read-only key token: %d %s", r.StatusCode, r.body)
	}
	// t[] and t[0] styles, encoded and not, all verify.
	q := "?t[]=thumbnail:width=5,height=5&t[]=desaturate"
	for _, u := range []string{
		e.tokenURL(path+q, userPriv),
		e.url + path + "?t%5B%5D=thumbnail%3Awidth%3D5%2Cheight%3D5&t%5B%5D=desaturate&accessToken=" + hmacHex(userPriv, e.url+path+q),
		e.url + path + "?t[0]=thumbnail:width=5,height=5&t[1]=desaturate&accessToken=" + hmacHex(userPriv, e.url+path+q),
	} {
		if r := e.get(u); r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", u, r.StatusCode, r.body)
		}
	}
	// An upper-case token is not the lower-case hex HMAC.
	u := e.url + path
	if r := e.get(u + "?accessToken=" + strings.ToUpper(hmacHex(userPriv, u))); r.StatusCode != 400 {
		t.Fatalf("upper-case token accepted: %d", r.StatusCode)
	}
	// Routes without a user need a public key.
	if r := e.get(e.url + "/groups"); r.StatusCode != 400 || !strings.HasPrefix(r.errMessage(t), "Missing public key: send X-Service-PublicKey") {
		t.Fatalf("groups without key: %d %s", r.StatusCode, r.body)
	}
	// A key without a rule for the user is refused before the token check.
	if r := e.get(e.url + "/users/bob/images?publicKey=alice"); r.StatusCode != 400 ||
		!strings.HasPrefix(r.errMessage(t), `Permission denied (public key): the access rules of key "alice" do not grant images.get on user "bob"`) {
		t.Fatalf("alice on bob: %d %s", r.StatusCode, r.body)
	}
}

func TestUploadAndFetch(t *testing.T) {
	e := newEnv(t, testConfig())
	data := pngImage(t, 64, 48, 4)
	sum := md5.Sum(data)
	want := hex.EncodeToString(sum[:])

	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data)
	m := r.json(t)
	if r.StatusCode != 201 || m["imageIdentifier"] != want || m["width"] != 64.0 || m["height"] != 48.0 || m["extension"] != "png" {
		t.Fatalf("upload: %d %s", r.StatusCode, r.body)
	}
	if r.Header.Get("X-Service-ImageIdentifier") != want {
		t.Fatalf("image identifier header: %v", r.Header)
	}
	if r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data); r.StatusCode != 200 || r.json(t)["imageIdentifier"] != want {
		t.Fatalf("duplicate upload: %d %s", r.StatusCode, r.body)
	}

	path := "/users/alice/images/" + want
	r = e.get(e.tokenURL(path, userPriv))
	if r.StatusCode != 200 || !bytes.Equal(r.body, data) || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("fetch original: %d %v", r.StatusCode, r.Header)
	}
	for k, v := range map[string]string{
		"X-Service-OriginalExtension": "png", "X-Service-OriginalMimeType": "image/png",
		"X-Service-OriginalFileSize": fmt.Sprint(len(data)), "X-Service-OriginalWidth": "64",
		"X-Service-OriginalHeight": "48", "Cache-Control": "public, max-age=31536000",
		"ETag": `"` + want + `"`,
	} {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	etag, lastMod := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
	if r := e.get(e.tokenURL(path, userPriv), "If-None-Match", etag); r.StatusCode != 304 {
		t.Fatalf("If-None-Match: %d", r.StatusCode)
	}
	if r := e.get(e.tokenURL(path, userPriv), "If-Modified-Since", lastMod); r.StatusCode != 304 {
		t.Fatalf("If-Modified-Since: %d", r.StatusCode)
	}
	head := e.request(http.MethodHead, e.tokenURL(path, userPriv), nil)
	for _, k := range []string{"Content-Type", "Content-Length", "ETag", "Last-Modified", "X-Service-OriginalWidth"} {
		if head.Header.Get(k) != r.Header.Get(k) {
			t.Errorf("HEAD %s = %q, GET %q", k, head.Header.Get(k), r.Header.Get(k))
		}
	}

	// Conversion by extension and by Accept; 406 when nothing fits.
	r = e.get(e.tokenURL(path+".jpg", userPriv))
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/jpeg" || !bytes.HasPrefix(r.body, []byte{0xff, 0xd8}) {
		t.Fatalf(".jpg: %d %v", r.StatusCode, r.Header)
	}
	r = e.get(e.tokenURL(path, userPriv), "Accept", "image/gif")
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/gif" || !strings.Contains(r.Header.Get("Vary"), "Accept") {
		t.Fatalf("Accept gif: %d %v", r.StatusCode, r.Header)
	}
	r = e.get(e.tokenURL(path, userPriv), "Accept", "image/*")
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("Accept image/*: %d %v", r.StatusCode, r.Header)
	}
	r = e.get(e.tokenURL(path, userPriv), "Accept", "application/json")
	if r.StatusCode != 406 || r.Header.Get("X-Service-OriginalWidth") != "64" || r.json(t)["imageIdentifier"] != want {
		t.Fatalf("Accept json on image: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	if r := e.get(e.tokenURL(path+".bmp", userPriv)); r.StatusCode != 404 {
		t.Fatalf(".bmp: %d", r.StatusCode)
	}
	if r := e.get(e.tokenURL("/users/alice/images/missing", userPriv)); r.StatusCode != 404 || r.errMessage(t) != "Image not found" {
		t.Fatalf("missing image: %d %s", r.StatusCode, r.body)
	}
}

func TestTransformedFetch(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(jpegImage(t, 599, 417))
	path := "/users/alice/images/" + id + ".png?t[]=resize:height=200"
	r := e.get(e.tokenURL(path, userPriv))
	if r.StatusCode != 200 {
		t.Fatalf("resize: %d %s", r.StatusCode, r.body)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(r.body))
	if err != nil || cfg.Width != 288 || cfg.Height != 200 {
		t.Fatalf("resize height=200 of 599x417: %v %dx%d, want 288x200", err, cfg.Width, cfg.Height)
	}
	if w, h := r.Header.Get("X-Service-OutputWidth"), r.Header.Get("X-Service-OutputHeight"); w != "288" || h != "200" {
		t.Fatalf("output dimension headers %s x %s, want 288 x 200", w, h)
	}
	sum := md5.Sum(r.body)
	if r.Header.Get("ETag") != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("ETag is not the md5 of the body: %v", r.Header)
	}
	// Second fetch comes from the variant cache with identical bytes.
	r2 := e.get(e.tokenURL(path, userPriv))
	if !bytes.Equal(r.body, r2.body) || r2.Header.Get("X-Service-OutputWidth") != "288" {
		t.Fatalf("cached variant differs: %v", r2.Header)
	}
	if r := e.get(e.tokenURL(path, userPriv), "If-None-Match", r.Header.Get("ETag")); r.StatusCode != 304 {
		t.Fatalf("transformed If-None-Match: %d", r.StatusCode)
	}
	for _, c := range []struct{ query, msg string }{
		{"?t=desaturate", "Transformations must be specifed as an array: write t[]=desaturate, one t[] for each step"},
		{"?t[][]=x", "Invalid transformation"},
		{"?t[]=nope", `Transformation "nope" not registered`},
	} {
		r := e.get(e.tokenURL("/users/alice/images/"+id+c.query, userPriv))
		if r.StatusCode != 400 || r.errMessage(t) != c.msg {
			t.Errorf("%s: %d %s", c.query, r.StatusCode, r.body)
		}
	}
	r = e.get(e.tokenURL("/users/alice/images/"+id+"?t[]=crop:width=abc,height=10", userPriv))
	if msg := r.errMessage(t); r.StatusCode != 400 || !strings.Contains(msg, "crop") || !strings.Contains(msg, "width") {
		t.Fatalf("bad parameter: %d %s", r.StatusCode, r.body)
	}
}

func TestUploadErrors(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxBodyBytes = 4096
	e := newEnv(t, cfg)
	cases := []struct {
		name   string
		body   []byte
		status int
		code   float64
	}{
		{"empty", nil, 400, 201},
		{"text", []byte("hello, this is not an image at all"), 415, 203},
		{"truncated png", pngImage(t, 30, 30, 9)[:60], 415, 205},
		{"too big body", noisePNG(t, 64, 64), 413, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, c.body)
			if r.StatusCode != c.status || r.json(t)["error"].(map[string]any)["serviceErrorCode"] != c.code {
				t.Fatalf("%d %s", r.StatusCode, r.body)
			}
		})
	}
	page, err := e.db.Images(t.Context(), storage.Query{})
	if err != nil || page.Hits != 0 {
		t.Fatalf("failed uploads left %d rows (%v)", page.Hits, err)
	}
}

func TestUploadDimensionLimit(t *testing.T) {
	e := newEnv(t, testConfig())
	// A tiny PNG whose header claims 40000x40000 pixels.
	data := pngHeaderOnly(t, 40000, 40000)
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data)
	if r.StatusCode != 413 {
		t.Fatalf("huge dimensions: %d %s", r.StatusCode, r.body)
	}
}

// pngHeaderOnly encodes a 1x1 PNG and rewrites its IHDR dimensions.
func pngHeaderOnly(t *testing.T, w, h uint32) []byte {
	b := pngImage(t, 1, 1, 0)
	put := func(off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	put(16, w)
	put(20, h)
	put(29, crc32.ChecksumIEEE(b[12:29])) // IHDR type + data
	return b
}

// noisePNG is a PNG of random pixels, which does not compress.
func noisePNG(t *testing.T, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.UintN(256))
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestConcurrentSameUpload(t *testing.T) {
	e := newEnv(t, testConfig())
	data := pngImage(t, 40, 40, 7)
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data).StatusCode
		}()
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		if s == 201 {
			created++
		} else if s != 200 {
			t.Fatalf("statuses %v", statuses)
		}
	}
	page, _ := e.db.Images(t.Context(), storage.Query{})
	if created != 1 || page.Hits != 1 {
		t.Fatalf("created %d (statuses %v), rows %d", created, statuses, page.Hits)
	}
}

func TestMetadata(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 10, 10, 5))
	path := "/users/alice/images/" + id + "/metadata"
	r := e.get(e.tokenURL(path, userPriv))
	if r.StatusCode != 200 || string(r.body) != "{}" {
		t.Fatalf("empty metadata: %d %s", r.StatusCode, r.body)
	}
	r = e.signed(http.MethodPut, path, userKey, userPriv, []byte(`{"a":1,"b":{"c":"d"}}`))
	if r.StatusCode != 200 || r.json(t)["a"] != 1.0 {
		t.Fatalf("put: %d %s", r.StatusCode, r.body)
	}
	r = e.signed(http.MethodPost, path, userKey, userPriv, []byte(`{"a":2,"e":true}`))
	if m := r.json(t); r.StatusCode != 200 || m["a"] != 2.0 || m["e"] != true || m["b"] == nil {
		t.Fatalf("merge: %d %s", r.StatusCode, r.body)
	}
	r = e.get(e.tokenURL(path+".json", userPriv))
	if m := r.json(t); m["a"] != 2.0 || r.Header.Get("ETag") == "" || r.Header.Get("Last-Modified") == "" {
		t.Fatalf("get after merge: %v %s", r.Header, r.body)
	}
	if r := e.get(e.tokenURL(path, userPriv), "If-None-Match", r.Header.Get("ETag")); r.StatusCode != 304 {
		t.Fatalf("metadata 304: %d", r.StatusCode)
	}
	for _, c := range []struct{ body, msg string }{
		{``, "Missing JSON data"},
		{`{"a":`, "Invalid JSON data"},
		// Refused, not stored as U+FFFD: the byte's offset is named.
		{"{\"name\":\"caf\xe9\"}", "Invalid JSON data: the body is not UTF-8 (an invalid byte at offset 12)"},
		{`[1,2]`, "Invalid metadata. A JSON object is expected"},
		{`{"a.b":1}`, "Invalid metadata. Dot characters ('.') are not allowed in metadata keys"},
		{`{"x":{"a::b":1}}`, "Invalid metadata. '::' is not allowed in metadata keys"},
		{`{"$set":1}`, "Invalid metadata. Keys must not start with '$'"},
		{strings.Repeat(`{"a":`, 20) + "1" + strings.Repeat("}", 20), "Invalid metadata. Nesting deeper than 16 levels is not allowed"},
	} {
		r := e.signed(http.MethodPut, path, userKey, userPriv, []byte(c.body))
		if r.StatusCode != 400 || r.errMessage(t) != c.msg || r.json(t)["imageIdentifier"] != id {
			t.Errorf("%q: %d %s", c.body, r.StatusCode, r.body)
		}
	}
	r = e.signed(http.MethodDelete, path, userKey, userPriv, nil)
	if r.StatusCode != 200 || string(r.body) != "{}" {
		t.Fatalf("delete: %d %s", r.StatusCode, r.body)
	}
	if r := e.signed(http.MethodPut, "/users/alice/images/nope/metadata", userKey, userPriv, []byte(`{}`)); r.StatusCode != 404 {
		t.Fatalf("metadata of missing image: %d", r.StatusCode)
	}
}

func TestListings(t *testing.T) {
	e := newEnv(t, testConfig())
	var ids []string
	for i := range 5 {
		ids = append(ids, e.upload(pngImage(t, 10+i, 10, uint8(i))))
	}
	r := e.get(e.tokenURL("/users/alice/images?limit=2&page=2&sort[]=width:asc&fields[]=width&fields[]=imageIdentifier", userPriv))
	m := r.json(t)
	search := m["search"].(map[string]any)
	images := m["images"].([]any)
	if r.StatusCode != 200 || search["hits"] != 5.0 || search["count"] != 2.0 || len(images) != 2 {
		t.Fatalf("page: %d %s", r.StatusCode, r.body)
	}
	first := images[0].(map[string]any)
	if first["width"] != 12.0 || len(first) != 2 {
		t.Fatalf("sorted page 2 starts with %v", first)
	}
	r = e.get(e.tokenURL("/users/alice/images?ids[]="+ids[0]+"&ids[]="+ids[1]+"&metadata=1", userPriv))
	if m := r.json(t); m["search"].(map[string]any)["hits"] != 2.0 || m["images"].([]any)[0].(map[string]any)["metadata"] == nil {
		t.Fatalf("ids filter: %s", r.body)
	}
	for q, msg := range map[string]string{
		"limit=0":        "limit must be between 1 and 1000",
		"sort[]=nope":    "Invalid sort field: nope",
		"sort[]=size:up": "Invalid sort value: size:up",
		"from=yesterday": "from must be a Unix timestamp",
	} {
		if r := e.get(e.tokenURL("/users/alice/images?"+q, userPriv)); r.StatusCode != 400 || r.errMessage(t) != msg {
			t.Errorf("%s: %d %s", q, r.StatusCode, r.body)
		}
	}
	if r := e.get(e.tokenURL("/users/nobody/images?publicKey=admin", adminPriv)); r.StatusCode != 404 || r.errMessage(t) != "User not found" {
		t.Fatalf("unknown user: %d %s", r.StatusCode, r.body)
	}
	r = e.get(e.tokenURL("/users/alice", userPriv))
	if m := r.json(t); r.StatusCode != 200 || m["numImages"] != 5.0 || m["user"] != "alice" {
		t.Fatalf("user: %d %s", r.StatusCode, r.body)
	}
	// Global listing: admin sees everyone; alice may not ask for bob.
	r = e.get(e.tokenURL("/images?publicKey=admin", adminPriv))
	if r.StatusCode != 200 || r.json(t)["search"].(map[string]any)["hits"] != 5.0 {
		t.Fatalf("global: %d %s", r.StatusCode, r.body)
	}
	cfg := testConfig()
	_ = cfg
	r = e.get(e.tokenURL("/images?publicKey=alice&users[]=alice&users[]=bob", userPriv))
	if r.StatusCode != 400 || r.errMessage(t) != "Public key does not have access to the users: [bob]" {
		t.Fatalf("global with denied user: %d %s", r.StatusCode, r.body)
	}
}

func TestShortURLs(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 30, 20, 6))
	path := "/users/alice/images/" + id + "/shorturls"
	body := fmt.Sprintf(`{"user":"alice","imageIdentifier":%q,"extension":"gif","query":"?t[]=thumbnail:width=10,height=10"}`, id)
	r := e.signed(http.MethodPost, path, userKey, userPriv, []byte(body))
	if r.StatusCode != 201 {
		t.Fatalf("create: %d %s", r.StatusCode, r.body)
	}
	sid := r.json(t)["id"].(string)
	if len(sid) != 7 {
		t.Fatalf("id %q", sid)
	}
	if r := e.signed(http.MethodPost, path, userKey, userPriv, []byte(body)); r.StatusCode != 200 || r.json(t)["id"] != sid {
		t.Fatalf("same short URL again: %d %s", r.StatusCode, r.body)
	}
	r = e.get(e.url+"/s/"+sid, "Accept", "image/png")
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/gif" {
		t.Fatalf("fetch short URL: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	cfgImg, _, err := image.DecodeConfig(bytes.NewReader(r.body))
	if err != nil || cfgImg.Width != 10 || cfgImg.Height != 10 {
		t.Fatalf("short URL image: %v %+v", err, cfgImg)
	}
	for _, c := range []struct{ body, msg string }{
		{`{"imageIdentifier":"` + id + `"}`, "Missing or invalid user: the body has no user; it must be alice, as in the path"},
		{`{"user":"alice"}`, "Missing or invalid image identifier: the body has no imageIdentifier; it must be " + id + ", as in the path"},
		{`{"user":"alice","imageIdentifier":"` + id + `","extension":"bmp"}`, "Extension provided is not a recognized format"},
	} {
		if r := e.signed(http.MethodPost, path, userKey, userPriv, []byte(c.body)); r.StatusCode != 400 || r.errMessage(t) != c.msg {
			t.Errorf("%s: %d %s", c.body, r.StatusCode, r.body)
		}
	}
	if r := e.signed(http.MethodDelete, path+"/"+"AAAAAAA", userKey, userPriv, nil); r.StatusCode != 404 {
		t.Fatalf("delete unknown short URL: %d", r.StatusCode)
	}
	// Deleting the image removes its short URLs, metadata and (once the
	// queue drains) blobs.
	key := e.blobKey("alice", id)
	if r := e.signed(http.MethodDelete, "/users/alice/images/"+id, userKey, userPriv, nil); r.StatusCode != 200 {
		t.Fatalf("delete image: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(e.url + "/s/" + sid); r.StatusCode != 404 {
		t.Fatalf("short URL after delete: %d", r.StatusCode)
	}
	if ok, _ := e.blobs.Exists(t.Context(), key); !ok {
		t.Fatal("blob gone before the queue drained")
	}
	e.drain()
	if ok, _ := e.blobs.Exists(t.Context(), key); ok {
		t.Fatal("blob survived delete")
	}
	if r := e.signed(http.MethodDelete, "/users/alice/images/"+id, userKey, userPriv, nil); r.StatusCode != 404 {
		t.Fatalf("second delete: %d", r.StatusCode)
	}
}

func TestGroupsAndJSONP(t *testing.T) {
	e := newEnv(t, testConfig())
	r := e.get(e.tokenURL("/groups?publicKey=admin&limit=2", adminPriv))
	if m := r.json(t); r.StatusCode != 200 || m["search"].(map[string]any)["hits"] != 3.0 || len(m["groups"].([]any)) != 2 {
		t.Fatalf("groups: %d %s", r.StatusCode, r.body)
	}
	r = e.get(e.tokenURL("/groups/read-only?publicKey=admin", adminPriv))
	if r.StatusCode != 200 || r.json(t)["name"] != "read-only" {
		t.Fatalf("group: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(e.tokenURL("/groups/nope?publicKey=admin", adminPriv)); r.StatusCode != 404 || r.errMessage(t) != "Group not found" {
		t.Fatalf("missing group: %d %s", r.StatusCode, r.body)
	}
	r = e.get(e.url + "/status?callback=cb")
	if !bytes.HasPrefix(r.body, []byte("cb({")) || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("jsonp: %s", r.body)
	}
	if r := e.get(e.url+"/status", "Accept", "image/png"); r.StatusCode != 406 {
		t.Fatalf("status as png: %d", r.StatusCode)
	}
}

func TestHeaderPrefix(t *testing.T) {
	cfg := testConfig()
	cfg.HeaderPrefix = "X-Imbo"
	e := newEnv(t, cfg)
	data := pngImage(t, 10, 10, 8)
	u := e.url + "/users/alice/images"
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	r := e.request(http.MethodPost, u, data, "X-Imbo-Authenticate-Timestamp", ts,
		"X-Imbo-Authenticate-Signature", hmacHex(userPriv, "POST|"+u+"|alice|"+ts))
	if r.StatusCode != 201 || r.Header.Get("X-Imbo-ImageIdentifier") == "" {
		t.Fatalf("imbo upload: %d %v", r.StatusCode, r.Header)
	}
	r = e.get(e.tokenURL("/users/alice/images/nope", userPriv))
	if r.Header.Get("X-Imbo-Error-Message") != "Image not found" {
		t.Fatalf("imbo error headers: %v", r.Header)
	}
}

var _ = api.Users{}

// TestUploadFormats: GET /status names the upload types the server
// accepts, the engine's (uploads.formats), for a client such as the admin
// UI to name them before a file is refused.
func TestUploadFormats(t *testing.T) {
	e := newEnv(t, testConfig())
	r := e.get(e.url + "/status")
	var st api.Status
	if err := json.Unmarshal(r.body, &st); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("GET /status: %d %s (%v)", r.StatusCode, r.body, err)
	}
	if !slices.Equal(st.UploadFormats, engine.DefaultUploadFormats) {
		t.Fatalf("upload formats %v, want %v", st.UploadFormats, engine.DefaultUploadFormats)
	}
}

// TestShortURLList lists an image's short URLs: none, then two in id
// order with their extension and transformations, and 404 for an unknown
// image.
func TestShortURLList(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 30, 20, 6))
	path := "/users/alice/images/" + id + "/shorturls"
	list := func() []any {
		t.Helper()
		r := e.get(e.tokenURL(path+"?publicKey=alice", userPriv))
		if r.StatusCode != 200 {
			t.Fatalf("list: %d %s", r.StatusCode, r.body)
		}
		return r.json(t)["shortUrls"].([]any)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("list before any: %v", got)
	}
	var sids []string
	for _, body := range []string{
		fmt.Sprintf(`{"user":"alice","imageIdentifier":%q,"extension":"gif","query":"t[]=thumbnail:width=10,height=10"}`, id),
		fmt.Sprintf(`{"user":"alice","imageIdentifier":%q}`, id),
	} {
		r := e.signed(http.MethodPost, path, userKey, userPriv, []byte(body))
		if r.StatusCode != 201 {
			t.Fatalf("create: %d %s", r.StatusCode, r.body)
		}
		sids = append(sids, r.json(t)["id"].(string))
	}
	slices.Sort(sids)
	got := list()
	if len(got) != 2 {
		t.Fatalf("list: %v", got)
	}
	for i, v := range got {
		m := v.(map[string]any)
		if m["id"] != sids[i] || m["user"] != "alice" || m["imageIdentifier"] != id {
			t.Fatalf("item %d = %v, want id %s", i, m, sids[i])
		}
		if q := m["query"].(map[string]any); m["extension"] == "gif" && fmt.Sprint(q["t"]) != "[thumbnail:width=10,height=10]" {
			t.Fatalf("item %d query = %v", i, q)
		}
	}
	r := e.get(e.tokenURL("/users/alice/images/nope/shorturls?publicKey=alice", userPriv))
	if r.StatusCode != 404 || r.errMessage(t) != "Image does not exist" {
		t.Fatalf("unknown image: %d %s", r.StatusCode, r.body)
	}
}

// TestVariantList lists an image's cached variants: none, then one per
// chain and format fetched, readable with a read-only key; 404 for an
// unknown image.
func TestVariantList(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 30, 20, 6))
	path := "/users/alice/images/" + id + "/variants"
	list := func() []any {
		t.Helper()
		r := e.get(e.tokenURL(path+"?publicKey="+roKey, roPriv))
		if r.StatusCode != 200 {
			t.Fatalf("list: %d %s", r.StatusCode, r.body)
		}
		return r.json(t)["variants"].([]any)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("variants before any fetch: %v", got)
	}
	for _, q := range []string{".png?t[]=desaturate", ".png?t[]=desaturate", ".gif?t[]=thumbnail:width=10,height=10"} {
		if r := e.get(e.tokenURL("/users/alice/images/"+id+q, userPriv)); r.StatusCode != 200 {
			t.Fatalf("fetch %s: %d", q, r.StatusCode)
		}
	}
	got := list()
	if len(got) != 2 {
		t.Fatalf("variants: %v, want 2", got)
	}
	made := map[string]bool{}
	for _, v := range got {
		m := v.(map[string]any)
		if m["hash"] == "" || m["size"].(float64) <= 0 || m["created"] == "" || m["lastUsed"] == "" {
			t.Fatalf("variant %v", m)
		}
		made[fmt.Sprint(m["format"], " ", m["chain"])] = true
	}
	for _, want := range []string{"png desaturate", "gif thumbnail:height=10,width=10"} {
		if !made[want] {
			t.Errorf("no variant made by %q among %v", want, made)
		}
	}
	if r := e.get(e.tokenURL("/users/alice/images/nope/variants?publicKey=alice", userPriv)); r.StatusCode != 404 {
		t.Fatalf("unknown image: %d %s", r.StatusCode, r.body)
	}
}
