package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/vitrine/vitrine/storage"
)

// TestAdminPhone: on a 375×740 phone the admin UI's frame and pages fit
// the screen. The navigation folds behind a Menu button (under 80 px high
// until opened, every link on the screen once opened), the keys table does
// not scroll sideways, and every chart axis label is drawn whole inside its
// chart, without overlapping another, at 375 and 1280 px.
func TestAdminPhone(t *testing.T) {
	b := newBrowser(t)
	s := startServer(t, "accessControl:\n  database: true\naudit:\n  flush: 100ms\n")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	// The charts' data: MiB of uploads, renders, a few 4xx; keys with rules.
	for i := range 3 {
		r := s.write(t, http.MethodPost, "/users/alice/images", noisePNG(t, 700, 500, uint64(i)), admin)
		wantStatus(t, "upload", r, http.StatusCreated)
		var up struct{ ImageIdentifier string }
		r.JSON(t, &up)
		wantStatus(t, "render", s.get(t, "/users/alice/images/"+up.ImageIdentifier+".jpg?t[]=thumbnail:width=120", admin), http.StatusOK)
	}
	checkStatus(t, "an unknown image", s.get(t, "/users/alice/images/00000000000000000000000000000000", admin), http.StatusNotFound)
	for _, k := range []string{"frontend-reader", "uploader-for-alice-and-bob"} {
		wantStatus(t, "PUT /keys/"+k, s.writeJSON(t, http.MethodPut, "/keys/"+k, map[string]string{"privateKey": "private-" + k}, admin), http.StatusCreated)
		wantStatus(t, "its rule", s.writeJSON(t, http.MethodPost, "/keys/"+k+"/access",
			map[string]any{"users": []string{"alice", "bob"}, "group": "read-write"}, admin), http.StatusOK)
	}
	for i := range 8 {
		user := fmt.Sprintf("photographer-with-a-long-name-%d", i)
		wantStatus(t, "upload for "+user, s.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 40, 30, byte(i)), admin), http.StatusCreated)
	}
	seedUsage(t, s.DataDir)
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")

	t.Run("navigation", func(t *testing.T) {
		b.do(chromedp.EmulateViewport(375, 740))
		h := eval[float64](b, `document.querySelector("header.side").getBoundingClientRect().height`)
		t.Logf("at 375 px the folded navigation is %.0f px high", h)
		if h > 80 {
			t.Errorf("at 375 px the folded navigation is %.0f px high, want at most 80", h)
		}
		if n := eval[int](b, `Array.from(document.querySelectorAll("nav[aria-label=Main] a")).filter(a => a.offsetParent !== null).length`); n != 0 {
			t.Errorf("%d navigation links show before the menu is opened", n)
		}
		if b.count(`button.nav-toggle`) == 0 {
			b.do(chromedp.EmulateViewport(1280, 900))
			t.Fatal("at 375 px the navigation has no menu button")
		}
		b.do(chromedp.Click(chromedp.CSS(`button.nav-toggle`), chromedp.NodeVisible))
		if e := eval[string](b, `document.querySelector("button.nav-toggle").getAttribute("aria-expanded")`); e != "true" {
			t.Errorf("the open menu's button says aria-expanded=%q", e)
		}
		if off := eval[[]string](b, `Array.from(document.querySelectorAll("nav[aria-label=Main] a, .who button")).flatMap(a => {
			const r = a.getBoundingClientRect();
			return a.offsetParent === null || r.left < 0 || r.right > innerWidth ? [a.textContent.trim()] : [];
		})`); len(off) > 0 {
			t.Errorf("with the menu open, %q are hidden or off the screen", off)
		}
		b.viewShot("menu-open")
		b.do(chromedp.Click(chromedp.CSS(`button.nav-toggle`), chromedp.NodeVisible))
		if h := eval[float64](b, `document.querySelector("header.side").getBoundingClientRect().height`); h > 80 {
			t.Errorf("closed again, the navigation is %.0f px high", h)
		}
		// On a wide screen the sidebar shows every link and no button.
		b.do(chromedp.EmulateViewport(1280, 900))
		if n := eval[int](b, `Array.from(document.querySelectorAll("nav[aria-label=Main] a")).filter(a => a.offsetParent !== null).length`); n < 10 {
			t.Errorf("at 1280 px the sidebar shows %d links", n)
		}
		if v := eval[bool](b, `document.querySelector("button.nav-toggle").offsetParent !== null`); v {
			t.Error("at 1280 px the menu button shows")
		}
	})

	t.Run("keys table", func(t *testing.T) {
		b.open(ui+"/keys", "keys")
		b.do(chromedp.EmulateViewport(375, 740))
		defer b.do(chromedp.EmulateViewport(1280, 900))
		if w := eval[float64](b, `document.documentElement.scrollWidth`); w > 375 {
			t.Errorf("at 375 px the keys page is %.0f px wide", w)
		}
		if over := eval[float64](b, `(() => { const t = document.querySelector("#keys-h ~ .table-scroll"); return t.scrollWidth - t.clientWidth; })()`); over > 0 {
			t.Errorf("at 375 px the keys table scrolls %.0f px sideways", over)
		}
		if v := eval[bool](b, `Array.from(document.querySelectorAll("#keys-h ~ .table-scroll td")).some(td => td.textContent.includes("UTC") || /^\d{4}-\d\d-\d\d/.test(td.textContent.trim()))`); !v {
			t.Error("at 375 px no key shows when it was created")
		}
	})

	t.Run("chart labels", func(t *testing.T) {
		// The counters reach the database at the next flush.
		for range 50 {
			if b.open(ui+"/", "overview-charts"); b.count(".chart-grid text") >= 10 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, w := range []int64{1280, 375} {
			b.do(chromedp.EmulateViewport(w, 900))
			if n := b.count(".chart-grid text"); n < 10 {
				t.Fatalf("at %d px the overview draws %d axis labels; the charts have no data", w, n)
			}
			for _, p := range chartLabelProblems(b) {
				t.Errorf("at %d px: %s", w, p)
			}
		}
		b.do(chromedp.EmulateViewport(1280, 900))
	})
}

// chartLabelProblems lists the axis labels of the page's charts that are
// not drawn whole inside their chart, overlap another label, or repeat
// another tick's label on the same axis.
func chartLabelProblems(b *browser) []string {
	return eval[[]string](b, `Array.from(document.querySelectorAll("svg.chart-svg")).flatMap(svg => {
		const id = svg.closest("figure").querySelector("figcaption").textContent.trim();
		const box = svg.getBoundingClientRect();
		const texts = Array.from(svg.querySelectorAll(".chart-grid text"));
		const rects = texts.map(t => t.getBoundingClientRect());
		const out = [];
		texts.forEach((t, i) => {
			const r = rects[i];
			if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
				out.push(id + ": label " + JSON.stringify(t.textContent) + " is cut by the chart's edge");
			}
			for (let j = 0; j < i; j++) {
				const q = rects[j];
				if (r.left < q.right - 0.5 && q.left < r.right - 0.5 && r.top < q.bottom - 0.5 && q.top < r.bottom - 0.5) {
					out.push(id + ": labels " + JSON.stringify(texts[j].textContent) + " and " + JSON.stringify(t.textContent) + " overlap");
				}
			}
		});
		const ticks = texts.filter(t => t.getAttribute("text-anchor") === "end").map(t => t.textContent);
		if (new Set(ticks).size !== ticks.length) {
			out.push(id + ": the axis repeats a label: " + JSON.stringify(ticks));
		}
		return out;
	})`)
}

// seedUsage adds 30 days of usage counters to the server's database, with
// the values whose labels were once cut: gigabytes uploaded a day, renders
// of about a second (ticks up to "2000 ms"), and refusals for keys with
// long names.
func seedUsage(t *testing.T, dataDir string) {
	t.Helper()
	var counts []storage.UsageCount
	now := time.Now().UTC()
	for d := range 30 {
		day := now.AddDate(0, 0, -d-1).Format(time.DateOnly)
		add := func(metric, label string, v int64) {
			counts = append(counts, storage.UsageCount{Day: day, Metric: metric, Label: label, Value: v, Last: now})
		}
		add(storage.MetricUploads, "alice", int64(20+d))
		add(storage.MetricUploadBytes, "alice", int64(d+1)<<27)
		add(storage.MetricRenders, "", 10)
		add(storage.MetricRenderMicros, "", int64(10*(600+d*25))*1000)
		add(storage.MetricVariantHits, "", int64(30+d))
		add(storage.MetricVariantMisses, "", 10)
		add(storage.MetricRequests, "200", int64(1000+100*d))
		add(storage.MetricRequests, "404", int64(d))
		add(storage.MetricRateLimited, fmt.Sprintf("a-key-with-a-long-public-name-%d", d%5), int64(d))
	}
	// Closed at once: an open handle would hold the server's writes.
	db, err := storage.Open(context.Background(), "sqlite://"+filepath.Join(dataDir, "vitrine.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.AddUsage(context.Background(), counts); err != nil {
		t.Fatal(err)
	}
}
