package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// imboSchema is the MySQL/MariaDB schema Imbo 3 ships (its
// scripts/mysql/000-imbo.sql), the tables an import reads.
var imboSchema = []string{
	"CREATE TABLE IF NOT EXISTS `imageinfo` (" +
		"`id` int unsigned NOT NULL AUTO_INCREMENT," +
		"`user` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`imageIdentifier` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`size` int unsigned NOT NULL," +
		"`extension` varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`mime` varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`added` int unsigned NOT NULL," +
		"`updated` int unsigned NOT NULL," +
		"`width` int unsigned NOT NULL," +
		"`height` int unsigned NOT NULL," +
		"`checksum` char(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`originalChecksum` char(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`metadata` json DEFAULT NULL," +
		"PRIMARY KEY (`id`)," +
		"UNIQUE KEY `image` (`user`, `imageIdentifier`)" +
		") ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci",
	"CREATE TABLE IF NOT EXISTS `imagevariations` (" +
		"`user` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`imageIdentifier` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`width` int unsigned NOT NULL," +
		"`height` int unsigned NOT NULL," +
		"`added` int unsigned NOT NULL," +
		"PRIMARY KEY (`user`, `imageIdentifier`, `width`)" +
		") ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci",
	"CREATE TABLE IF NOT EXISTS `shorturl` (" +
		"`shortUrlId` char(7) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`user` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`imageIdentifier` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"`extension` char(3) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci DEFAULT NULL," +
		"`query` text CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL," +
		"PRIMARY KEY (`shortUrlId`)," +
		"KEY `params` (`user`, `imageIdentifier`, `extension`, `query`(255))" +
		") ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci",
}

// phpSerialize writes a list of transformations the way PHP's serialize
// writes Imbo's short URL query, ["t" => [...]]: string lengths in bytes.
func phpSerialize(ts []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `a:1:{s:1:"t";a:%d:{`, len(ts))
	for i, t := range ts {
		fmt.Fprintf(&b, `i:%d;s:%d:"%s";`, i, len(t), t)
	}
	b.WriteString("}}")
	return b.String()
}

// imboFixture is one image of the Imbo installation the test builds.
type imboFixture struct {
	user, id, ext string
	body          []byte
	added         int64
	metadata      map[string]any
}

// imboPath is where Imbo 3's Filesystem storage keeps the image: the user
// padded to three characters with zeros, then the identifier's first three.
func imboPath(user, id string, old bool) string {
	tail := filepath.Join(id[:1], id[1:2], id[2:3], id)
	if old {
		return filepath.Join(user, tail)
	}
	p := fmt.Sprintf("%03s", user)
	p = strings.ReplaceAll(p, " ", "0")
	return filepath.Join(p[:1], p[1:2], p[2:3], user, tail)
}

func imboID(rng *rand.Rand) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	b := make([]byte, 12)
	for i := range b {
		b[i] = chars[rng.IntN(len(chars))]
	}
	return string(b)
}

// TestImportImbo builds an Imbo 3 installation (the MariaDB schema Imbo
// ships, filled as Imbo fills it, and its Filesystem layout, current and
// older) with 200 images, metadata, short URLs and variation rows, plus a
// missing file, a file that is not its image and a short URL of no
// image; imports it; and serves it with headerPrefix X-Imbo: every image
// answers under its old identifier with its bytes, dates and metadata,
// every short URL with its transformations. The three broken rows are
// reported, and a second run imports nothing twice.
func TestImportImbo(t *testing.T) {
	base := mysqlDSN(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = u.User.Username(), "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
	cfg.Passwd, _ = u.User.Password()
	idb, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer idb.Close()
	for _, s := range imboSchema {
		if _, err := idb.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	files := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 49))
	users := []string{"imbo", "ab", "x"}
	var images []imboFixture
	for i := range 200 {
		f := imboFixture{user: users[i%3], id: imboID(rng), ext: "jpg", added: 1560000000 + int64(i)*86400}
		if i%4 == 0 {
			f.ext, f.body = "png", testPNG(t, 40+i%30, 30, byte(i))
		} else {
			f.body = testJPEG(t, 60+i%40, 40, byte(i))
		}
		if i%3 != 2 {
			f.metadata = map[string]any{"title": fmt.Sprintf("photo %d", i), "tags": []any{"a", "b"}, "camera": map[string]any{"iso": float64(100 + i)}}
		}
		images = append(images, f)
	}
	put := func(f imboFixture, old bool, md any, checksum string) {
		path := filepath.Join(files, imboPath(f.user, f.id, old))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.body != nil {
			if err := os.WriteFile(path, f.body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if checksum == "" {
			checksum = md5Hex(f.body)
		}
		mime := map[string]string{"jpg": "image/jpeg", "png": "image/png"}[f.ext]
		w, h := 10, 10
		if f.body != nil {
			_, w, h = decodeSize(t, f.id, f.body)
		}
		if _, err := idb.Exec("INSERT INTO imageinfo (user, imageIdentifier, size, extension, mime, added, updated, width, height, checksum, originalChecksum, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			f.user, f.id, len(f.body), f.ext, mime, f.added, f.added+3600, w, h, checksum, checksum, md); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range images {
		var md any // NULL, as Imbo leaves an image it never got metadata for
		switch {
		case f.metadata != nil:
			b, _ := json.Marshal(f.metadata)
			md = string(b)
		case i%2 == 0:
			md = "[]" // PHP's json_encode of metadata deleted
		}
		put(f, i%20 == 0, md, "")
	}
	// The broken: a row whose file is gone, a file that is not its row's.
	missing := imboFixture{user: "imbo", id: imboID(rng), ext: "jpg"}
	put(missing, false, nil, strings.Repeat("0", 32))
	wrong := imboFixture{user: "ab", id: imboID(rng), ext: "jpg", body: testJPEG(t, 20, 20, 1)}
	put(wrong, false, nil, strings.Repeat("f", 32))

	// Short URLs of 30 images (PHP-serialized queries, as Imbo writes
	// them; one by hand), one of an image there is not, and variations.
	shortIDs := map[string]imboFixture{}
	queries := map[string][]string{}
	withExt := map[string]bool{}
	for i := range 30 {
		f := images[i*6]
		id := imboID(rng)[:7]
		id = strings.NewReplacer("_", "a", "-", "b").Replace(id)
		ts := []string{fmt.Sprintf("thumbnail:width=%d,height=20", 20+i), "desaturate"}
		q := phpSerialize(ts)
		if i == 0 {
			q = `a:1:{s:1:"t";a:2:{i:0;s:28:"thumbnail:width=20,height=20";i:1;s:10:"desaturate";}}`
		}
		var ext any
		if i%2 == 0 {
			ext, withExt[id] = "png", true
		}
		if _, err := idb.Exec("INSERT INTO shorturl (shortUrlId, user, imageIdentifier, extension, query) VALUES (?, ?, ?, ?, ?)", id, f.user, f.id, ext, q); err != nil {
			t.Fatal(err)
		}
		shortIDs[id], queries[id] = f, ts
	}
	if _, err := idb.Exec("INSERT INTO shorturl (shortUrlId, user, imageIdentifier, extension, query) VALUES ('Nothing', 'imbo', 'notanimage12', NULL, 'a:0:{}')"); err != nil {
		t.Fatal(err)
	}
	for _, f := range images[:10] {
		if _, err := idb.Exec("INSERT INTO imagevariations (user, imageIdentifier, width, height, added) VALUES (?, ?, 20, 10, ?)", f.user, f.id, f.added); err != nil {
			t.Fatal(err)
		}
	}

	data := t.TempDir()
	args := []string{"import", "imbo", "--json", "--data", data, "--database", base, "--storage", files}
	var report struct {
		Images, Imported, Present, Metadata, ShortURLs, ShortURLsImported, Variations int
		Failed                                                                        []string
	}
	run := func() {
		t.Helper()
		out, errOut, err := runCLI(t, nil, args...)
		if err == nil {
			t.Fatalf("import of an installation with broken rows exited 0:\n%s", out)
		}
		report.Failed = nil
		if jerr := json.Unmarshal([]byte(out), &report); jerr != nil {
			t.Fatalf("import --json: %v\n%s\n%s", jerr, out, errOut)
		}
	}
	run()
	want := []string{missing.id, wrong.id, "Nothing"}
	if report.Images != 202 || report.Imported != 200 || report.Metadata != 134 || report.ShortURLs != 31 ||
		report.ShortURLsImported != 30 || report.Variations != 10 || len(report.Failed) != 3 {
		t.Fatalf("import: %+v", report)
	}
	for i, w := range want {
		if !strings.Contains(report.Failed[i], w) {
			t.Errorf("failure %d: %q, want one naming %s", i, report.Failed[i], w)
		}
	}
	run()
	if report.Imported != 0 || report.Present != 200 || report.ShortURLsImported != 0 || len(report.Failed) != 3 {
		t.Fatalf("second import: %+v; want nothing imported twice", report)
	}

	k := key{Public: "imbo", Private: "imbo-private"}
	s := startServerData(t, fmt.Sprintf(`headerPrefix: X-Imbo
accessControl:
  keys:
    - publicKey: %s
      privateKey: %s
      rules:
        - users: "*"
          group: read-write
`, k.Public, k.Private), data)
	for _, f := range images {
		r := s.get(t, "/users/"+f.user+"/images/"+f.id, k)
		if r.Status != http.StatusOK || !bytes.Equal(r.Body, f.body) || r.Header.Get("X-Imbo-ImageIdentifier") != f.id {
			t.Fatalf("image %s/%s: %d, %d bytes, identifier header %q; want its %d bytes", f.user, f.id, r.Status, len(r.Body),
				r.Header.Get("X-Imbo-ImageIdentifier"), len(f.body))
		}
		var md map[string]any
		s.get(t, "/users/"+f.user+"/images/"+f.id+"/metadata", k).JSON(t, &md)
		if f.metadata == nil && len(md) != 0 || f.metadata != nil && !reflect.DeepEqual(md, f.metadata) {
			t.Fatalf("metadata of %s/%s: %v, want %v", f.user, f.id, md, f.metadata)
		}
	}
	var list struct {
		Images []struct {
			ImageIdentifier, Added, Updated string
		}
	}
	s.get(t, "/users/imbo/images?limit=100", k).JSON(t, &list)
	dates := map[string][2]string{}
	for _, im := range list.Images {
		dates[im.ImageIdentifier] = [2]string{im.Added, im.Updated}
	}
	for _, f := range images {
		if f.user != "imbo" {
			continue
		}
		added, updated := time.Unix(f.added, 0).UTC().Format(http.TimeFormat), time.Unix(f.added+3600, 0).UTC().Format(http.TimeFormat)
		if got := dates[f.id]; got != [2]string{added, updated} {
			t.Fatalf("dates of imbo/%s: %v, want added %s, updated %s", f.id, got, added, updated)
		}
	}
	type shortWant struct {
		ID  string `json:"id"`
		MD5 string `json:"md5"`
	}
	var shorts []shortWant
	for id, f := range shortIDs {
		short := s.get(t, "/s/"+id, k)
		shorts = append(shorts, shortWant{id, md5Hex(short.Body)})
		q := url.Values{"t[]": queries[id]}
		path := "/users/" + f.user + "/images/" + f.id
		if withExt[id] {
			path += ".png"
		}
		direct := s.get(t, path+"?"+q.Encode(), k)
		if short.Status != http.StatusOK || !bytes.Equal(short.Body, direct.Body) {
			t.Fatalf("short URL %s: %d, %d bytes; the image it names with its transformations: %d, %d bytes", id, short.Status, len(short.Body), direct.Status, len(direct.Body))
		}
	}
	t.Run("ImboClient", func(t *testing.T) { readWithImboClient(t, s, k, images, shorts) })
}

// readWithImboClient reads every imported image and short URL with Imbo's
// JavaScript client (testdata/imboclient-read.js).
func readWithImboClient[S any](t *testing.T, s *server, k key, images []imboFixture, shorts []S) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: reading the import with the Imbo JavaScript client needs Node.js and npm", tool)
		}
	}
	type imageWant struct {
		User      string         `json:"user"`
		ID        string         `json:"id"`
		MD5       string         `json:"md5"`
		Width     int            `json:"width"`
		Height    int            `json:"height"`
		Size      int            `json:"size"`
		Extension string         `json:"extension"`
		Mime      string         `json:"mime"`
		Metadata  map[string]any `json:"metadata"`
	}
	var want struct {
		Images    []imageWant `json:"images"`
		ShortURLs []S         `json:"shortUrls"`
	}
	for _, f := range images {
		_, w, h := decodeSize(t, f.id, f.body)
		want.Images = append(want.Images, imageWant{f.user, f.id, md5Hex(f.body), w, h, len(f.body), f.ext,
			map[string]string{"jpg": "image/jpeg", "png": "image/png"}[f.ext], f.metadata})
	}
	want.ShortURLs = shorts
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	expect := filepath.Join(t.TempDir(), "expect.json")
	if err := os.WriteFile(expect, b, 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "imboclient-read.js"))
	if err != nil {
		t.Fatal(err)
	}
	modules := installImboClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "IMBO_HOST="+s.URL, "IMBO_PUBLIC_KEY="+k.Public,
		"IMBO_PRIVATE_KEY="+k.Private, "IMBO_EXPECT="+expect)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(lastLine(string(out)), "PASS") {
		t.Fatalf("the Imbo client read the import (%v):\n%s", err, out)
	}
	t.Log(lastLine(string(out)))
}
