package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser harness: Debian's chromium driven by chromedp, every page
// checked with axe-core and captured at desktop and phone widths.

// chromiumPath is Debian's chromium, or $VITRINE_CHROMIUM.
func chromiumPath(t *testing.T) string {
	p := os.Getenv("VITRINE_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("browser tests need chromium at %s (apt-get install chromium, or set VITRINE_CHROMIUM): %v", p, err)
	}
	return p
}

// axeSource installs axe-core from npm into a temporary directory and
// returns its script.
func axeSource(t *testing.T) string {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("browser tests need npm to install axe-core (apt-get install npm)")
	}
	dir := t.TempDir()
	cmd := exec.Command(npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "axe-core@4")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install axe-core: %v\n%s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// browser is one headless chromium with one tab.
type browser struct {
	t     *testing.T
	ctx   context.Context
	axe   string
	shots string // screenshot directory
	test  string // prefix of screenshot names
	n     int
}

func newBrowser(t *testing.T) *browser {
	exe := chromiumPath(t)
	axe := axeSource(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("hide-scrollbars", true),
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	dir := os.Getenv("VITRINE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The first run starts the browser; its context must carry no timeout,
	// which would end the browser with it.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, axe: axe, shots: dir, test: strings.ToLower(t.Name())}
}

// do runs actions, failing the test on error.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v (at %s)", err, b.location())
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("browser: evaluating %.80q: %v", expr, err)
	}
	return v
}

func (b *browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return loc
}

// open navigates to url and checks the page.
func (b *browser) open(url, name string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url))
	b.check(name)
}

// submit clicks sel and waits until a new document has loaded, then checks
// it. Why not chromedp's navigation wait: a form post may answer with the
// same URL (a re-rendered form with errors).
func (b *browser) submit(sel, name string) {
	b.t.Helper()
	eval[chromedp.Void](b, `window.__vitrineOld = true`)
	b.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	b.waitNewDocument()
	b.check(name)
}

func (b *browser) waitNewDocument() {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__vitrineOld === undefined && document.readyState === "complete"`))
		cancel()
		if err == nil && done {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("browser: no new page after submitting (at %s)", b.location())
}

// waitFor waits until expr is truthy in the current page.
func (b *browser) waitFor(expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil {
			return
		}
		// Why again: a poll started as the previous document went away
		// names its gone execution context (or is cut off by the
		// navigation); the new document has another.
		gone := strings.Contains(err.Error(), "Cannot find context with specified id") ||
			strings.Contains(err.Error(), "Inspected target navigated or closed")
		if !gone || ctx.Err() != nil {
			b.t.Fatalf("browser: waiting for %s: %v (at %s)", expr, err, b.location())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text returns the text of the first element matching a CSS selector, ""
// when there is none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, _ := json.Marshal(sel)
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%s) || {textContent: ""}).textContent.trim()`, s))
}

// check runs axe-core on the page (no serious or critical violation may
// remain) and saves full-page screenshots at 1280 and 375 px wide, waiting
// for images first so the screenshots show them.
func (b *browser) check(name string) {
	b.t.Helper()
	// Lazy images far below the first screen would never load (nor be
	// complete): the screenshots show every image.
	b.waitFor(`document.readyState === "complete"`)
	eval[chromedp.Void](b, `document.querySelectorAll("img[loading=lazy]").forEach(i => { i.loading = "eager"; })`)
	b.waitFor(`Array.from(document.images).every(i => i.complete)`)
	if !eval[bool](b, `typeof axe !== "undefined"`) {
		eval[chromedp.Void](b, b.axe)
	}
	if b.n == 0 {
		b.axeSelfTest()
	}
	type violation struct {
		ID, Impact, Help string
		Nodes            []string
	}
	vs := eval[[]violation](b, `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))})))`,
		chromedp.EvalAwaitPromise)
	for _, v := range vs {
		b.t.Errorf("axe on %s (%s): %s %s: %s; nodes %v", name, b.location(), v.Impact, v.ID, v.Help, v.Nodes)
	}
	b.n++
	for _, w := range []int64{1280, 375} {
		// Why a viewport as tall as the page: captures beyond the viewport
		// sometimes leave unpainted tiles.
		b.do(chromedp.EmulateViewport(w, 900))
		h := eval[int64](b, `Math.max(900, document.documentElement.scrollHeight)`)
		b.do(chromedp.EmulateViewport(w, h))
		ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			b.t.Fatalf("screenshot of %s: %v", name, err)
		}
		file := filepath.Join(b.shots, fmt.Sprintf("%s-%02d-%s-%d.png", b.test, b.n, name, w))
		if err := os.WriteFile(file, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.do(chromedp.EmulateViewport(1280, 900))
}

// axeSelfTest makes sure axe really reports: an image without alt text
// must come back as a critical image-alt violation.
func (b *browser) axeSelfTest() {
	b.t.Helper()
	found := eval[bool](b, `(() => {
		const d = document.createElement("div");
		d.id = "axe-self-test";
		d.innerHTML = '<img src="data:,">';
		document.body.appendChild(d);
		return axe.run(d, {runOnly: ["image-alt"]}).then(r => { d.remove(); return r.violations.some(v => v.id === "image-alt"); });
	})()`, chromedp.EvalAwaitPromise)
	if !found {
		b.t.Fatal("axe self-test: an image without alt text was not reported; the accessibility checks would prove nothing")
	}
}

// signIn signs in on the sign-in page of the UI at ui with k and checks
// the page it lands on.
func (b *browser) signIn(ui string, k key, name string) {
	b.t.Helper()
	if !strings.Contains(b.location(), "/signin") {
		b.open(ui+"/signin", name+"-signin")
	}
	b.do(chromedp.SetValue(chromedp.ID("publicKey"), k.Public), chromedp.SetValue(chromedp.ID("privateKey"), k.Private))
	b.submit(`form[action$="/signin"] button[type=submit]`, name)
}

// count is the number of elements matching a CSS selector.
func (b *browser) count(sel string) int {
	b.t.Helper()
	s, _ := json.Marshal(sel)
	return eval[int](b, fmt.Sprintf(`document.querySelectorAll(%s).length`, s))
}

// covered lists the elements matching sel that something else covers at
// the current viewport: each is scrolled into view (as little as needed)
// and the element at its centre must be inside it.
func (b *browser) covered(sel string) []string {
	b.t.Helper()
	s, _ := json.Marshal(sel)
	return eval[[]string](b, fmt.Sprintf(`Array.from(document.querySelectorAll(%s)).flatMap((el, i) => {
		el.scrollIntoView({block: "nearest"});
		const r = el.getBoundingClientRect();
		const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		return at && el.contains(at) ? [] : ["#" + i + " under " + (at ? at.tagName.toLowerCase() + "." + at.className : "nothing")];
	})`, s))
}

// viewShot saves a screenshot of the viewport as it is (not the whole
// page), to see what covers what.
func (b *browser) viewShot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot of %s: %v", name, err)
	}
	b.n++
	if err := os.WriteFile(filepath.Join(b.shots, fmt.Sprintf("%s-%02d-%s-view.png", b.test, b.n, name)), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
