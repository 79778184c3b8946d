// Command mixed prepares the mixed workload of e2e/load/mixed.sh: a corpus
// of distinct sources of several sizes and formats (1080p and 12 MP JPEGs,
// PNG screenshots, WebPs), uploaded to a running vitrine, and one request
// list drawn from a Zipf distribution over (source, transformation chain,
// output format), so that some requests repeat as they do on a real site.
// The same list is written for vitrine (signed request targets) and for
// imgproxy (its URL format, reading the corpus as local files), one target a
// line, for wrk to replay.
//
//	mixed -corpus DIR -n 200 -url http://127.0.0.1:PORT -priv SECRET \
//	    -count 20000 -s 1.0 -seed 1 -out DIR
//
// writes DIR/vitrine.paths and DIR/imgproxy.paths and prints the list's
// repeat share (the hit rate of an unbounded cache that starts empty) on
// standard output. Without -url it only generates the corpus and the
// imgproxy list. Sources already in the corpus directory are reused.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/vitrine/vitrine/e2e/load/loadkit"
)

func main() {
	base := flag.String("url", "", "base URL of vitrine, e.g. http://127.0.0.1:8080 (none: no upload, no vitrine list)")
	user := flag.String("user", "load", "user the images are stored for")
	pub := flag.String("pub", "load", "public key (read-write on user)")
	priv := flag.String("priv", "", "private key")
	corpus := flag.String("corpus", "", "directory of the sources (generated where missing)")
	n := flag.Int("n", 200, "number of distinct sources")
	count := flag.Int("count", 20000, "requests in the list")
	s := flag.Float64("s", 1.0, "Zipf exponent: 0 is uniform, higher repeats the popular requests more")
	seed := flag.Uint64("seed", 1, "seed of the list")
	prefix := flag.String("imgproxy-prefix", "", "path of the corpus under imgproxy's IMGPROXY_LOCAL_FILESYSTEM_ROOT")
	out := flag.String("out", "", "directory for vitrine.paths and imgproxy.paths")
	flag.Parse()
	if *corpus == "" || *out == "" || *n < 1 || *count < 1 || *s < 0 || (*base != "" && *priv == "") {
		flag.Usage()
		os.Exit(2)
	}
	vips.LoggingSettings(nil, vips.LogLevelWarning)
	vips.Startup(nil)
	defer vips.Shutdown()
	check(ensureCorpus(*corpus, *n))
	check(os.MkdirAll(*out, 0o755))

	seq := zipfSequence(*n, *s, *seed, *count)
	var lines []string
	p := strings.Trim(*prefix, "/")
	if p != "" {
		p += "/"
	}
	for _, it := range seq {
		c := chains[it.chain]
		lines = append(lines, "/unsafe/"+c.imgproxy+"/plain/local:///"+p+sourceName(it.src)+"@"+c.format)
	}
	check(writeLines(filepath.Join(*out, "imgproxy.paths"), lines))

	if *base != "" {
		*base = strings.TrimSuffix(*base, "/")
		ids, err := uploadAll(*base, *user, *pub, *priv, *corpus, *n)
		check(err)
		lines = lines[:0]
		for _, it := range seq {
			c := chains[it.chain]
			path := "/users/" + *user + "/images/" + ids[it.src] + "." + c.ext + "?" + c.vitrine
			lines = append(lines, path+"&accessToken="+loadkit.HMACHex(*priv, *base+path))
		}
		check(writeLines(filepath.Join(*out, "vitrine.paths"), lines))
	}
	repeat, distinct := stats(seq)
	fmt.Printf("%d requests over %d distinct (source, chain) pairs of %d, Zipf s=%g seed=%d: %.1f%% repeat an earlier request\n",
		len(seq), distinct, *n*len(chains), *s, *seed, 100*repeat)
}

func writeLines(file string, lines []string) error {
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mixed:", err)
		os.Exit(1)
	}
}
