package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// tusPage is a page of another origin than vitrine that uploads its
// /big.png with the browser bundle of tus-js-client the admin UI ships
// (web/assets/tus.min.js), under an upload token as a Bearer credential,
// retrying every half second for 30 seconds. It keeps what it learns in
// window.tusState: bytes sent, the offsets HEAD answered, the image
// identifier once done, or the error.
const tusPage = `<!doctype html><meta charset="utf-8"><title>tus upload</title>
<script src="/tus.min.js"></script>
<script>
window.tusState = {sent: 0, resumed: [], id: '', done: false, error: ''};
async function start(endpoint, token) {
  const file = await (await fetch('/big.png')).blob();
  const st = window.tusState;
  const upload = new tus.Upload(file, {
    endpoint: endpoint,
    headers: {Authorization: 'Bearer ' + token},
    retryDelays: Array(60).fill(500),
    storeFingerprintForResuming: false,
    onAfterResponse: (req, res) => {
      if (req.getMethod() === 'HEAD') st.resumed.push(Number(res.getHeader('Upload-Offset')));
      const h = res.getHeader('X-Service-ImageIdentifier');
      if (h) st.id = h;
    },
    onProgress: (sent) => { st.sent = sent; },
    onSuccess: () => { st.done = true; },
    onError: (e) => { st.error = String(e).split('\n')[0]; },
  });
  upload.start();
}
</script>`

// tusPageState is window.tusState.
type tusPageState struct {
	Sent    int
	Resumed []int
	ID      string
	Done    bool
	Error   string
}

// TestTusResumeAfterKillChromium: in Chromium, a page of another origin
// uploads a 60 MB PNG with the browser bundle of tus-js-client and an
// upload token; the server is killed (SIGKILL) once the page has sent
// about half and restarted on the same address; the page's retries resume
// the upload from what the staging folder kept and finish it. The image is
// the one a POST of the file names, with the same bytes; fsck finds
// nothing and the staging folder is empty.
func TestTusResumeAfterKillChromium(t *testing.T) {
	b := newBrowser(t)
	bundle, err := os.ReadFile(filepath.Join("..", "web", "assets", "tus.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	staging := t.TempDir()
	cfg := tusKillConfig(staging)
	data := t.TempDir()
	s := startServerData(t, cfg, data)
	file, img := bigPNG(t)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, tusPage)
	})
	mux.HandleFunc("GET /tus.min.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(bundle)
	})
	mux.HandleFunc("GET /big.png", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, file)
	})
	page := httptest.NewServer(mux)
	defer page.Close()
	// The token is kept to the page's origin, as a page's backend would ask.
	tok := s.issueToken(t, map[string]any{"maxBytes": 100 << 20, "origin": page.URL})

	b.do(chromedp.Navigate(page.URL))
	// The browser sends at most 20 MB/s to vitrine, so that the kill falls
	// in the middle of the upload rather than after it.
	throttleUploads(b, 20<<20)
	eval[chromedp.Void](b, fmt.Sprintf(`start(%q, %q)`, s.URL+"/users/alice/uploads", tok.Token))
	b.waitFor(fmt.Sprintf(`window.tusState.error !== '' || window.tusState.sent >= %d`, len(img)/2))
	s2 := killAndRestart(t, s, cfg, data)
	b.waitFor(`window.tusState.error !== '' || window.tusState.done`)
	st := eval[tusPageState](b, `window.tusState`)
	if st.Error != "" {
		t.Fatalf("tus-js-client in Chromium: %s", st.Error)
	}
	if len(st.Resumed) == 0 || st.Resumed[len(st.Resumed)-1] <= 0 {
		t.Fatalf("the page resumed from offsets %v: nothing the killed server received was kept", st.Resumed)
	}
	t.Logf("resumed from %v of %d bytes", st.Resumed, len(img))
	checkSameAsPost(t, s2, st.ID, img)
	checkClean(t, s2, staging)
}
