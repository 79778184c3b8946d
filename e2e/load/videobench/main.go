// Command videobench measures pictures of a video side by side in one run
// (e2e/load/video.sh): a running vitrine with uploads.video on and the
// variant cache off is sent frame-at-time requests (keyframe and exact
// seeking), poster requests, and the same chain on the poster stored as a
// plain image, each by c clients for a while; the floor is ffmpeg run once
// per request (`ffmpeg -ss T -i in -frames:v 1`, scaled to the same width,
// to a JPEG) by c workers. Every request of a run names a distinct time,
// so no cache or coalescing serves one from another. It prints a Markdown
// table: requests/s, p50 and p99 per workload, and each against the floor.
//
//	videobench -url http://127.0.0.1:PORT -priv SECRET -video in.mp4 [-c 4] [-duration 20s] [-width 640]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image/jpeg"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vitrine/vitrine/e2e/load/loadkit"
)

func main() {
	base := flag.String("url", "", "base URL of a vitrine with uploads.video on")
	user := flag.String("user", "load", "user the video is stored for")
	pub := flag.String("pub", "load", "public key (read-write on user)")
	priv := flag.String("priv", "", "private key")
	video := flag.String("video", "", "the video file")
	c := flag.Int("c", 4, "clients (and ffmpeg workers) at once")
	dur := flag.Duration("duration", 20*time.Second, "how long each workload runs")
	width := flag.Int("width", 640, "the width of every picture")
	ffmpeg := flag.String("ffmpeg", "ffmpeg", "the ffmpeg of the floor")
	flag.Parse()
	if *base == "" || *priv == "" || *video == "" || *c < 1 {
		flag.Usage()
		os.Exit(2)
	}
	*base = strings.TrimSuffix(*base, "/")
	data, err := os.ReadFile(*video)
	check(err)
	seconds := probeSeconds(*video)
	vid, err := loadkit.Upload(*base, *user, *pub, *priv, data)
	check(err)
	poster := get(*base + signed(*base, *user, *priv, vid, ""))
	img, err := loadkit.Upload(*base, *user, *pub, *priv, poster)
	check(err)
	fmt.Fprintf(os.Stderr, "videobench: %s (%d KB, %.1f s) stored as %s; its poster (%d KB) as the image %s\n",
		filepath.Base(*video), len(data)/1024, seconds, vid, len(poster)/1024, img)

	scale := fmt.Sprintf("maxSize:width=%d", *width)
	for _, id := range []string{vid, img} { // the variations worker builds their copies
		waitForCopy(*base + signed(*base, *user, *priv, id, scale))
	}
	at := func(i int) string { return strconv.FormatFloat(float64(i%9973)*(seconds-0.5)/9973, 'f', 3, 64) }
	httpRun := func(id string, spec func(int) string) func(context.Context, int) error {
		return func(ctx context.Context, i int) error {
			return fetch(ctx, *base+signed(*base, *user, *priv, id, spec(i)), *width)
		}
	}
	tmp, err := os.MkdirTemp("", "videobench")
	check(err)
	defer os.RemoveAll(tmp)
	workloads := []struct {
		name string
		run  func(context.Context, int) error
	}{
		{"ffmpeg -ss T -i in -frames:v 1 (the floor)", func(ctx context.Context, i int) error {
			out := filepath.Join(tmp, strconv.Itoa(i)+".jpg")
			defer os.Remove(out)
			cmd := exec.CommandContext(ctx, *ffmpeg, "-nostdin", "-loglevel", "error", "-ss", at(i), "-i", *video,
				"-frames:v", "1", "-vf", fmt.Sprintf("scale=%d:-2", *width), "-q:v", "3", "-y", out)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, b)
			}
			return checkJPEG(out, *width)
		}},
		{"vitrine frame:time=T (keyframe)", httpRun(vid, func(i int) string { return "frame:time=" + at(i) + "&t[]=" + scale })},
		{"vitrine frame:time=T,exact=1", httpRun(vid, func(i int) string { return "frame:time=" + at(i) + ",exact=1&t[]=" + scale })},
		{"vitrine poster, resized", httpRun(vid, fixed(scale))},
		{"vitrine the poster as an image, resized", httpRun(img, fixed(scale))},
	}
	fmt.Printf("| workload (%d at once, %s each, %d px wide JPEG) | req/s | p50 ms | p99 ms | errors | req/s against the floor |\n|---|---|---|---|---|---|\n", *c, *dur, *width)
	var floor float64
	for k, wl := range workloads {
		r := measure(*c, *dur, wl.run)
		if k == 0 {
			floor = r.rps
		}
		fmt.Printf("| %s | %.1f | %.0f | %.0f | %d | %.2fx |\n", wl.name, r.rps, r.p50, r.p99, r.errors, r.rps/floor)
	}
}

// fixed is a spec that is the same for every request.
func fixed(s string) func(int) string { return func(int) string { return s } }

// result is one workload's numbers.
type result struct {
	rps, p50, p99 float64
	errors        int64
}

// measure runs do by c workers for dur, each call with the next index,
// and reports the calls finished per second and their latency.
func measure(c int, dur time.Duration, do func(context.Context, int) error) result {
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var next, errs atomic.Int64
	var mu sync.Mutex
	var ms []float64
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for ctx.Err() == nil {
				t := time.Now()
				err := do(ctx, int(next.Add(1)))
				if ctx.Err() != nil {
					return // cut by the end of the run: not counted
				}
				if err != nil {
					if errs.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "videobench: first error:", err)
					}
					continue
				}
				mu.Lock()
				ms = append(ms, float64(time.Since(t).Microseconds())/1000)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	slices.Sort(ms)
	q := func(p float64) float64 {
		if len(ms) == 0 {
			return 0
		}
		return ms[min(len(ms)-1, int(p*float64(len(ms))))]
	}
	return result{float64(len(ms)) / elapsed, q(0.5), q(0.99), errs.Load()}
}

// signed is the request target of a JPEG GET of id through spec (none: the
// poster as stored), with an access token over the full URL.
func signed(base, user, priv, id, spec string) string {
	path, sep := "/users/"+user+"/images/"+id+".jpg", "?"
	if spec != "" {
		path, sep = path+"?t[]="+spec, "&"
	}
	return path + sep + "accessToken=" + loadkit.HMACHex(priv, base+path)
}

// fetch GETs url and checks that it answers a JPEG width pixels wide.
func fetch(ctx context.Context, url string, width int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("GET %s: %d %s", url, res.StatusCode, b)
	}
	err = isJPEG(res.Body, "GET "+url, width)
	_, _ = io.Copy(io.Discard, res.Body)
	return err
}

// isJPEG checks that r starts a JPEG width pixels wide; what names it.
func isJPEG(r io.Reader, what string, width int) error {
	cfg, err := jpeg.DecodeConfig(r)
	if err == nil && cfg.Width != width {
		err = fmt.Errorf("%s: %d px wide, want %d", what, cfg.Width, width)
	}
	return err
}

// checkJPEG checks that the file at path is a JPEG width pixels wide.
func checkJPEG(path string, width int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return isJPEG(f, path, width)
}

// get GETs url and returns its body; it exits on a failure.
func get(url string) []byte {
	res, err := http.Get(url)
	check(err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	check(err)
	if res.StatusCode != http.StatusOK {
		check(fmt.Errorf("GET %s: %d %s", url, res.StatusCode, b))
	}
	return b
}

// waitForCopy waits up to a minute until url renders from a stored
// variation (X-Service-Source: variation-<width>).
func waitForCopy(url string) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		res, err := http.Get(url)
		check(err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		source := res.Header.Get("X-Service-Source")
		if strings.HasPrefix(source, "variation-") {
			fmt.Fprintf(os.Stderr, "videobench: renders from %s\n", source)
			return
		}
		if time.Now().After(deadline) {
			check(fmt.Errorf("GET %s still renders from %q after a minute: are stored variations on?", url, source))
		}
	}
}

// probeSeconds is the duration of the video at path, by ffprobe.
func probeSeconds(path string) float64 {
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path).Output()
	check(err)
	s, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err == nil && s < 1 {
		err = errors.New("the video is shorter than a second")
	}
	check(err)
	return s
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "videobench:", err)
		os.Exit(1)
	}
}
