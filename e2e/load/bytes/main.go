// Command bytes is the byte benchmark of auto quality (make bench-bytes,
// README Perceptual quality): for each source image, resized to a width,
// it encodes vitrine's auto output (JPEG, and the best of the auto-quality
// formats as for an Accept that takes them all) at the named targets and
// fixed q80 JPEG and WebP (imgproxy's default quality), and prints the bytes
// and SSIMULACRA 2 score of each against the resized image, with
// butteraugli_main's distance when it is installed, as a Markdown table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/engine"
)

type out struct {
	ext   string
	data  []byte
	score float64
	butt  float64
}

func main() {
	width := flag.Int("width", 1200, "output width")
	levels := flag.String("levels", "low,medium,high", "auto-quality targets")
	buttLevels := flag.String("butteraugli", "high", "levels whose outputs butteraugli_main also scores (it takes seconds an image)")
	flag.Parse()
	e, err := engine.New(engine.Config{})
	if err != nil {
		fail(err)
	}
	tmp, err := os.MkdirTemp("", "bench-bytes")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	_, butteraugli := exec.LookPath("butteraugli_main")
	ctx := context.Background()
	resize := fmt.Sprintf("resize:width=%d", *width)
	render := func(src []byte, format string, formats []string, specs ...string) *engine.Result {
		chain, err := e.ParseChain(append([]string{resize}, specs...))
		if err != nil {
			fail(err)
		}
		res, err := e.Process(ctx, src, engine.Request{Chain: chain, Format: format, Formats: formats})
		if err != nil {
			fail(err)
		}
		return res
	}
	type total struct{ bytes, meets, n int }
	totals := map[string]*total{}
	var names []string
	fmt.Println("| image | level | q80 jpg | q80 webp | auto jpg | auto best |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, path := range flag.Args() {
		src, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		ref := render(src, "png", nil).Data
		refPath := filepath.Join(tmp, "ref.png")
		if err := os.WriteFile(refPath, ref, 0o644); err != nil {
			fail(err)
		}
		withButt := true
		score := func(o *out) {
			if o.score, err = engine.Compare(ref, o.data); err != nil {
				fail(err)
			}
			o.butt = -1
			if butteraugli == nil && withButt {
				// butteraugli_main reads PNG and JPEG: others go through PNG.
				p := filepath.Join(tmp, "dist.png")
				png := o.data
				if o.ext != "jpg" && o.ext != "png" {
					png = render(o.data, "png", nil).Data
				}
				_ = os.WriteFile(p, png, 0o644)
				if b, err := exec.Command("butteraugli_main", refPath, p).Output(); err == nil {
					o.butt, _ = strconv.ParseFloat(strings.Fields(string(b))[0], 64)
				}
			}
		}
		fixed := map[string]*out{}
		for _, ext := range []string{"jpg", "webp"} {
			o := &out{ext: ext, data: render(src, ext, nil, "compress:level=80").Data}
			score(o)
			fixed[ext] = o
		}
		name := filepath.Base(path)
		if dir := filepath.Dir(path); filepath.Base(dir) == "images" {
			// Plasma's wallpapers: <name>/contents/images/<size>.jpg
			name = filepath.Base(filepath.Dir(filepath.Dir(dir)))
		}
		names = append(names, name)
		for _, level := range strings.Split(*levels, ",") {
			withButt = slices.Contains(strings.Split(*buttLevels, ","), level)
			autoJ := render(src, "jpg", nil, "compress:level=auto,target="+level)
			best := render(src, "jpg", engine.AutoQualityFormats(), "compress:level=auto,target="+level)
			oj := &out{ext: "jpg", data: autoJ.Data}
			ob := &out{ext: best.Ext, data: best.Data}
			score(oj)
			score(ob)
			row := []string{name, level}
			for _, c := range []struct {
				key string
				o   *out
			}{{"q80 jpg", fixed["jpg"]}, {"q80 webp", fixed["webp"]}, {"auto jpg " + level, oj}, {"auto best " + level, ob}} {
				t := totals[c.key]
				if t == nil {
					t = &total{}
					totals[c.key] = t
				}
				t.bytes += len(c.o.data)
				t.n++
				if c.o.score >= fixed["jpg"].score {
					t.meets++
				}
				cell := fmt.Sprintf("%s %d B, %.1f", c.o.ext, len(c.o.data), c.o.score)
				if c.o.butt >= 0 {
					cell += fmt.Sprintf(", ba %.2f", c.o.butt)
				}
				row = append(row, cell)
			}
			fmt.Println("| " + strings.Join(row, " | ") + " |")
		}
	}
	fmt.Println()
	fmt.Printf("Totals over %d images (bytes; images scoring at least q80 JPEG's SSIMULACRA 2):\n\n", len(names))
	fmt.Println("| output | bytes | vs q80 jpg | score >= q80 jpg |")
	fmt.Println("|---|---|---|---|")
	base := totals["q80 jpg"]
	keys := []string{"q80 jpg", "q80 webp"}
	for _, level := range strings.Split(*levels, ",") {
		keys = append(keys, "auto jpg "+level, "auto best "+level)
	}
	for _, k := range keys {
		t := totals[k]
		n := len(names)
		if strings.HasPrefix(k, "q80") {
			t.bytes /= t.n / n
		}
		fmt.Printf("| %s | %d | %+.1f%% | %d/%d |\n", k, t.bytes, 100*float64(t.bytes-base.bytes)/float64(base.bytes), t.meets*n/t.n, n)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-bytes:", err)
	os.Exit(1)
}
