package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// tokenKeys are the keys of the upload token tests: backend may upload for
// alice (and so issue tokens for her), auditor reads the audit log.
var (
	backendKey = key{Public: "backend", Private: "backend-secret"}
	auditorKey = key{Public: "auditor", Private: "auditor-secret"}
)

const tokenKeysConfig = `accessControl:
  keys:
    - publicKey: backend
      privateKey: backend-secret
      rules: [{users: [alice], group: read-write}]
    - publicKey: auditor
      privateKey: auditor-secret
      rules: [{users: "*", group: all}]
uploads:
  tokenMaxTTL: 1h
`

// uploadToken is the answer of POST /users/<user>/uploadtokens.
type uploadToken struct {
	Token, ID, Expires string
	Uploads            int
}

// issueToken asks s for an upload token for alice, signed by backend.
func (s *server) issueToken(t *testing.T, policy map[string]any) uploadToken {
	t.Helper()
	r := s.writeJSON(t, http.MethodPost, "/users/alice/uploadtokens", policy, backendKey)
	wantStatus(t, "issue an upload token", r, http.StatusCreated)
	var tok uploadToken
	r.JSON(t, &tok)
	return tok
}

// tokenUpload posts data to user's images with the token as a Bearer
// credential.
func (s *server) tokenUpload(t *testing.T, user, token string, data []byte) *response {
	t.Helper()
	return s.do(t, http.MethodPost, "/users/"+user+"/images", data, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
	})
}

// TestUploadTokens drives upload tokens over HTTP against the binary: a
// backend issues them, a client uploads with the token alone (header or
// form), and the refusals say why.
func TestUploadTokens(t *testing.T) {
	s := startServer(t, tokenKeysConfig)
	var tok uploadToken
	t.Run("issue", func(t *testing.T) {
		tok = s.issueToken(t, map[string]any{"uploads": 2, "formats": []string{"png"}, "metadata": map[string]any{"album": "summer"}})
		if !strings.HasPrefix(tok.Token, "vut_") || tok.Uploads != 2 {
			t.Fatalf("token %+v", tok)
		}
	})
	var id string
	t.Run("upload with the header", func(t *testing.T) {
		img := testPNG(t, 40, 30, 1)
		r := s.tokenUpload(t, "alice", tok.Token, img)
		wantStatus(t, "upload", r, http.StatusCreated)
		var up struct{ ImageIdentifier string }
		r.JSON(t, &up)
		if id = up.ImageIdentifier; id != md5Hex(img) {
			t.Fatalf("identifier %s, want %s", id, md5Hex(img))
		}
		var md map[string]any
		s.get(t, "/users/alice/images/"+id+"/metadata", backendKey).JSON(t, &md)
		if md["album"] != "summer" {
			t.Errorf("metadata %v, want the token's", md)
		}
	})
	t.Run("upload with a form", func(t *testing.T) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		part, _ := w.CreateFormFile("image", "photo.png")
		part.Write(testPNG(t, 40, 30, 2))
		w.Close()
		r := s.do(t, http.MethodPost, "/users/alice/images?uploadToken="+tok.Token, b.Bytes(), func(r *http.Request) {
			r.Header.Set("Content-Type", w.FormDataContentType())
		})
		wantStatus(t, "form upload", r, http.StatusCreated)
	})
	t.Run("used up", func(t *testing.T) {
		s.checkError(t, "third upload", s.tokenUpload(t, "alice", tok.Token, testPNG(t, 40, 30, 3)),
			http.StatusUnauthorized, "Upload token is used up: it allowed 2 uploads")
	})
	t.Run("audited as the issuing key", func(t *testing.T) {
		var log struct {
			Entries []struct {
				Actor, Target string
				Detail        map[string]any
			}
		}
		s.get(t, "/audit?action=image.create", auditorKey).JSON(t, &log)
		if len(log.Entries) != 2 || log.Entries[1].Actor != "backend" || log.Entries[1].Target != "alice/"+id ||
			log.Entries[1].Detail["uploadToken"] != tok.ID {
			t.Errorf("audit %+v, want backend's uploads naming token %s", log.Entries, tok.ID)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		other := s.issueToken(t, nil)
		s.checkError(t, "another user", s.tokenUpload(t, "bob", other.Token, testPNG(t, 8, 8, 4)),
			http.StatusForbidden, "Upload token is for user alice, not bob")
		s.checkError(t, "another route", s.do(t, http.MethodGet, "/users/alice/images?uploadToken="+other.Token, nil, nil),
			http.StatusForbidden, "An upload token authorises only uploads: POST /users/<user>/images and /users/<user>/uploads")
		s.checkError(t, "a type it does not take", s.tokenUpload(t, "alice", s.issueToken(t, map[string]any{"formats": []string{"jpg"}}).Token,
			testPNG(t, 8, 8, 5)), http.StatusUnsupportedMediaType, "Image type png is not accepted by the upload token (it accepts jpg)")
		revoked := s.issueToken(t, nil)
		wantStatus(t, "revoke", s.write(t, http.MethodDelete, "/users/alice/uploadtokens/"+revoked.ID, nil, backendKey), http.StatusOK)
		if r := s.tokenUpload(t, "alice", revoked.Token, testPNG(t, 8, 8, 6)); r.Status != http.StatusUnauthorized ||
			!strings.HasPrefix(r.errorMessage(), "Upload token was revoked at ") {
			t.Errorf("revoked token: %s", r)
		}
		short := s.issueToken(t, map[string]any{"expiresIn": 1})
		waitPast(t, short.Expires)
		s.checkError(t, "expired", s.tokenUpload(t, "alice", short.Token, testPNG(t, 8, 8, 7)),
			http.StatusUnauthorized, "Upload token expired at "+short.Expires)
	})
}

// waitPast waits until the HTTP-date has passed on this machine's clock
// (the server's), at most 10 s.
func waitPast(t *testing.T, date string) {
	t.Helper()
	at, err := http.ParseTime(date)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(at); d > 10*time.Second {
		t.Fatalf("%s is %s away", date, d)
	}
	for !time.Now().After(at) {
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUploadTokenInstances races uploads with a 1-use token across two
// instances on one PostgreSQL database: one is stored, the others are
// told the token is used up.
func TestUploadTokenInstances(t *testing.T) {
	dsn := postgresDSN(t)
	blobs := t.TempDir()
	cfg := tokenKeysConfig + fmt.Sprintf("database: %q\nstorage: %q\nsecret: shared\n", dsn, "file://"+blobs)
	a, b := startServer(t, cfg), startServer(t, cfg)
	tok := a.issueToken(t, nil)
	const n = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses []int
		start    = make(chan struct{})
	)
	for i := range n {
		s := []*server{a, b}[i%2]
		img := testPNG(t, 30, 30, byte(10+i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/users/alice/images", bytes.NewReader(img))
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			res, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			mu.Lock()
			statuses = append(statuses, res.StatusCode)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	slices.Sort(statuses)
	if want := append([]int{http.StatusCreated}, slices.Repeat([]int{http.StatusUnauthorized}, n-1)...); !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want one 201 and %d 401", statuses, n-1)
	}
	var page struct{ Search struct{ Hits int } }
	b.get(t, "/users/alice/images", backendKey).JSON(t, &page)
	if page.Search.Hits != 1 {
		t.Fatalf("alice has %d images, want 1", page.Search.Hits)
	}
}

// tokenPage is the page of another origin: it asks its own backend for a
// token (/token), uploads the backend's files (/files/<name>) to vitrine
// with it, and lists alice's images through the backend (/list).
const tokenPage = `<!doctype html><meta charset="utf-8"><title>uploader</title>
<script>
const vitrine = %q;
async function token(params) {
  const r = await fetch('/token?' + new URLSearchParams(params), {method: 'POST'});
  return (await r.json()).token;
}
async function upload(tok, user, name) {
  const file = await (await fetch('/files/' + name)).blob();
  const r = await fetch(vitrine + '/users/' + user + '/images',
    {method: 'POST', headers: {Authorization: 'Bearer ' + tok}, body: file});
  const b = await r.json();
  return {status: r.status, id: b.imageIdentifier || '', message: b.error ? b.error.message : '',
    header: r.headers.get('X-Service-ImageIdentifier') || ''};
}
async function list() { return (await fetch('/list')).json(); }
</script>`

// pageResult is what the page's upload returns: the status, the image
// identifier from the body and from the header the page may read, and the
// error message.
type pageResult struct {
	Status              int
	ID, Header, Message string
}

// TestUploadTokenBrowser: in Chromium, a page served from another origin
// gets tokens from its tiny backend and uploads with them, CORS preflight
// and all: three files with one token (one too large, refused with the
// policy's message), then lists them; a token reused past its count,
// expired, or used on another user is refused, and the page reads why.
func TestUploadTokenBrowser(t *testing.T) {
	exe := chromiumPath(t)
	s := startServer(t, tokenKeysConfig)
	small1, small2, big := testPNG(t, 16, 16, 1), testPNG(t, 16, 16, 2), testPNG(t, 400, 300, 3)
	maxBytes := len(big) - 1
	if len(small1) >= maxBytes || len(small2) >= maxBytes {
		t.Fatalf("test files: %d, %d and %d bytes", len(small1), len(small2), len(big))
	}
	files := map[string][]byte{"small1.png": small1, "small2.png": small2, "big.png": big}
	var page *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, tokenPage, s.URL)
	})
	mux.HandleFunc("GET /files/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(files[r.PathValue("name")])
	})
	// The backend: it holds the key, signs the token request, and keeps
	// the token to the page's origin.
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		policy := map[string]any{"origin": page.URL}
		for _, k := range []string{"uploads", "maxBytes", "expiresIn"} {
			if v := r.URL.Query().Get(k); v != "" {
				var n int
				fmt.Sscan(v, &n)
				policy[k] = n
			}
		}
		body, _ := json.Marshal(policy)
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/users/alice/uploadtokens", bytes.NewReader(body))
		signWrite(req, backendKey)
		relay(w, req)
	})
	mux.HandleFunc("GET /list", func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest(http.MethodGet, signRead(s.URL+"/users/alice/images", backendKey), nil)
		relay(w, req)
	})
	page = httptest.NewServer(mux)
	defer page.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true),
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	run := func(expr string) []pageResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		res, err := chromedp.Run(ctx, chromedp.Evaluate[[]pageResult](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("page: %v", err)
		}
		return res
	}
	// The first run starts the browser: its context must carry no timeout,
	// which would end the browser with it.
	if err := chromedp.Do(bctx, chromedp.Navigate(page.URL)); err != nil {
		t.Fatalf("opening the page: %v", err)
	}

	t.Run("three files, one too large", func(t *testing.T) {
		got := run(fmt.Sprintf(`(async () => {
			const t = await token({uploads: 3, maxBytes: %d});
			const out = [];
			for (const f of ['small1.png', 'big.png', 'small2.png']) out.push(await upload(t, 'alice', f));
			return out;
		})()`, maxBytes))
		want := []pageResult{
			{Status: 201, ID: md5Hex(small1), Header: md5Hex(small1)},
			{Status: 413, Message: fmt.Sprintf("Image too large for the upload token: it allows at most %d bytes", maxBytes)},
			{Status: 201, ID: md5Hex(small2), Header: md5Hex(small2)},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("uploads %+v, want %+v", got, want)
		}
		var listing struct {
			Images []struct{ ImageIdentifier string }
		}
		ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](`list()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &listing); err != nil {
			t.Fatalf("listing %s: %v", raw, err)
		}
		var ids []string
		for _, im := range listing.Images {
			ids = append(ids, im.ImageIdentifier)
		}
		slices.Sort(ids)
		wantIDs := []string{md5Hex(small1), md5Hex(small2)}
		slices.Sort(wantIDs)
		if !slices.Equal(ids, wantIDs) {
			t.Errorf("listed %v, want %v", ids, wantIDs)
		}
	})
	t.Run("refused tokens", func(t *testing.T) {
		got := run(`(async () => {
			const once = await token({uploads: 1});
			const out = [await upload(once, 'alice', 'big.png'), await upload(once, 'alice', 'small1.png')];
			out.push(await upload(await token({}), 'bob', 'small2.png'));
			return out;
		})()`)
		if len(got) != 3 || got[0].Status != 201 || got[1].Status != 401 || got[1].Message != "Upload token is used up: it allowed 1 upload" ||
			got[2].Status != 403 || got[2].Message != "Upload token is for user alice, not bob" {
			t.Errorf("reused and foreign tokens: %+v", got)
		}
		ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		tok, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
			window.shortLived = await token({expiresIn: 1});
			return window.shortLived;
		})()`, chromedp.EvalAwaitPromise))
		if err != nil || !strings.HasPrefix(tok, "vut_") {
			t.Fatalf("short-lived token %q: %v", tok, err)
		}
		waitPast(t, time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
		got = run(`(async () => [await upload(window.shortLived, 'alice', 'small2.png')])()`)
		if len(got) != 1 || got[0].Status != 401 || !strings.HasPrefix(got[0].Message, "Upload token expired at ") {
			t.Errorf("expired token: %+v", got)
		}
	})
}

// relay sends req and copies its answer to w.
func relay(w http.ResponseWriter, req *http.Request) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
	w.WriteHeader(res.StatusCode)
	io.Copy(w, res.Body)
}
