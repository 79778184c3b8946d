package storage

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// An Imbo 3 installation keeps its images in a database (the schema Imbo
// ships for MySQL/MariaDB, PostgreSQL and SQLite: imageinfo with a
// metadata JSON column, shorturl, imagevariations) and their bytes in a
// folder or bucket, at <user[0]>/<user[1]>/<user[2]>/<user>/<id[0]>/<id[1]>/<id[2]>/<id>
// (the user padded to three characters with leading zeros), or, written
// by older versions, <user>/<id[0]>/<id[1]>/<id[2]>/<id>. ImportImbo
// copies it into a vitrine store with every identifier kept, so existing
// image and short URLs answer as before.

// ImboSource is an Imbo installation to import.
type ImboSource struct {
	// Database is mysql://, postgres:// or sqlite:// (the database Imbo's
	// PDO adapter uses).
	Database string
	// Images holds the image files (Imbo's Filesystem storage dataDir, or
	// a bucket with the same layout).
	Images *Blobs
}

// ImportReport is what ImportImbo did.
type ImportReport struct {
	Images int `json:"images"`
	// Imported were added now; Present were there already (a second run).
	Imported int   `json:"imported"`
	Present  int   `json:"present"`
	Bytes    int64 `json:"bytes"`
	// Metadata counts the images whose metadata came along.
	Metadata          int `json:"metadata"`
	ShortURLs         int `json:"shortUrls"`
	ShortURLsImported int `json:"shortUrlsImported"`
	// Variations counts Imbo's image variation rows: vitrine builds its own
	// (vitrine variations), so none is copied.
	Variations int `json:"variations"`
	// Failed names what was not imported, and why.
	Failed  []string `json:"failed,omitempty"`
	Seconds float64  `json:"seconds"`
}

// imboImage is a row of Imbo's imageinfo.
type imboImage struct {
	user, id, ext, mime, checksum, original string
	size, width, height, added, updated     int64
	metadata                                sql.NullString
}

// ImportImbo copies src into db and blobs, image by image (the blob
// written, then the row with its metadata in one transaction), then the
// short URLs. An image already there is left as it is, so a run that
// stopped is run again.
func ImportImbo(ctx context.Context, src ImboSource, db *DB, blobs *Blobs, progress func(string, int64, int64)) (*ImportReport, error) {
	start := time.Now()
	idb, quote, err := openImbo(src.Database)
	if err != nil {
		return nil, err
	}
	defer idb.Close()
	q := func(s string) string {
		return strings.NewReplacer("{", quote, "}", quote).Replace(s)
	}
	r := &ImportReport{}
	rows, err := idb.QueryContext(ctx, q(`SELECT {user}, {imageIdentifier}, {size}, {extension}, {mime}, {added}, {updated},
		{width}, {height}, {checksum}, {originalChecksum}, {metadata} FROM {imageinfo} ORDER BY {id}`))
	if err != nil {
		return nil, fmt.Errorf("storage: import: read imageinfo: %w", err)
	}
	var images []imboImage
	for rows.Next() {
		var m imboImage
		var original sql.NullString
		if err := rows.Scan(&m.user, &m.id, &m.size, &m.ext, &m.mime, &m.added, &m.updated, &m.width, &m.height,
			&m.checksum, &original, &m.metadata); err != nil {
			rows.Close()
			return nil, fmt.Errorf("storage: import: read imageinfo: %w", err)
		}
		m.original = original.String
		images = append(images, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: import: read imageinfo: %w", err)
	}
	r.Images = len(images)
	for i, m := range images {
		if err := importImboImage(ctx, src.Images, db, blobs, m, r); err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.Failed = append(r.Failed, fmt.Sprintf("image %s/%s: %v", m.user, m.id, err))
		}
		if progress != nil {
			progress("images", int64(i+1), int64(len(images)))
		}
	}
	if err := importImboShortURLs(ctx, idb, q, db, r); err != nil {
		return r, err
	}
	if err := idb.QueryRowContext(ctx, q(`SELECT COUNT(*) FROM {imagevariations}`)).Scan(&r.Variations); err != nil {
		r.Variations = 0 // an installation without image variations has no table
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// openImbo opens Imbo's database and returns how it quotes identifiers.
func openImbo(dsn string) (*sql.DB, string, error) {
	var (
		db    *sql.DB
		err   error
		quote = `"`
	)
	switch {
	case strings.HasPrefix(dsn, "mysql://"):
		var src string
		if src, err = mysqlDSN(dsn); err == nil {
			db, err = sql.Open("mysql", src)
		}
		quote = "`"
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err = sql.Open("pgx", dsn)
	case strings.HasPrefix(dsn, "sqlite:"):
		file, ok := SQLiteFile(dsn)
		if !ok {
			return nil, "", fmt.Errorf("storage: import: %s names no SQLite file: %w", dsn, ErrInvalid)
		}
		db, err = sql.Open("sqlite3", "file:"+file+"?mode=ro")
	default:
		return nil, "", fmt.Errorf("storage: import: the Imbo database must be mysql://, postgres:// or sqlite://, not %q: %w", RedactURL(dsn), ErrInvalid)
	}
	if err == nil {
		err = db.Ping()
	}
	if err != nil {
		return nil, "", fmt.Errorf("storage: import: open the Imbo database %s: %w", RedactURL(dsn), err)
	}
	return db, quote, nil
}

// importImboImage copies one image: its bytes (checked against Imbo's
// checksum, the MD5 of the stored bytes), then its row and metadata.
func importImboImage(ctx context.Context, images *Blobs, db *DB, blobs *Blobs, m imboImage, r *ImportReport) error {
	if _, err := db.Image(ctx, m.user, m.id); err == nil {
		r.Present++
		return nil
	} else if !errors.Is(err, ErrNotExist) {
		return err
	}
	data, err := readImboFile(ctx, images, m.user, m.id)
	if err != nil {
		return err
	}
	if sum := md5.Sum(data); m.checksum != "" && hex.EncodeToString(sum[:]) != m.checksum {
		return fmt.Errorf("its file's MD5 is %x, the database says %s: the file is not this image's", sum, m.checksum)
	}
	img := &Image{User: m.user, Identifier: m.id, Size: int64(len(data)), Extension: m.ext, Mime: m.mime,
		Width: int(m.width), Height: int(m.height), Checksum: m.checksum, OriginalChecksum: m.original,
		Added: time.Unix(m.added, 0), Updated: time.Unix(m.updated, 0), BlobToken: NewBlobToken()}
	if md, err := imboMetadata(m.metadata); err != nil {
		return err
	} else if len(md) > 0 {
		img.Metadata = md
	}
	res, err := db.Reserve(ctx, img.Key())
	if err != nil {
		return err
	}
	if err := blobs.Put(ctx, img.Key(), data); err != nil {
		return errors.Join(err, db.Release(ctx, res))
	}
	created, err := db.CommitImage(ctx, img, res, false)
	if err != nil {
		return errors.Join(err, db.Release(ctx, res))
	}
	if !created {
		r.Present++
		return nil
	}
	r.Imported++
	r.Bytes += int64(len(data))
	if img.Metadata != nil {
		r.Metadata++
	}
	return nil
}

// imboFileKeys are where Imbo's Filesystem storage keeps user's image id:
// the current layout, then the older one.
func imboFileKeys(user, id string) []string {
	padded := user
	for len(padded) < 3 {
		padded = "0" + padded
	}
	tail := ""
	if len(id) >= 3 {
		tail = id[:1] + "/" + id[1:2] + "/" + id[2:3] + "/" + id
	}
	return []string{padded[:1] + "/" + padded[1:2] + "/" + padded[2:3] + "/" + user + "/" + tail, user + "/" + tail}
}

// readImboFile reads the image file of user's image id.
func readImboFile(ctx context.Context, images *Blobs, user, id string) ([]byte, error) {
	if len(id) < 3 {
		return nil, fmt.Errorf("an image identifier of under 3 characters has no file in Imbo's layout: %w", ErrInvalid)
	}
	keys := imboFileKeys(user, id)
	for _, k := range keys {
		data, err := images.Get(ctx, k)
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, ErrNotExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no file at %s or %s: %w", keys[0], keys[1], ErrNotExist)
}

// imboMetadata decodes an imageinfo metadata column: NULL or a JSON
// object (PHP writes an empty one as []).
func imboMetadata(col sql.NullString) (map[string]any, error) {
	s := strings.TrimSpace(col.String)
	if !col.Valid || s == "" || s == "null" || s == "[]" {
		return nil, nil
	}
	var md map[string]any
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		return nil, fmt.Errorf("its metadata is not a JSON object: %v", err)
	}
	return md, nil
}

// importImboShortURLs copies Imbo's short URLs, whose query Imbo keeps
// PHP-serialized (serialize(["t" => [...]])).
func importImboShortURLs(ctx context.Context, idb *sql.DB, q func(string) string, db *DB, r *ImportReport) error {
	rows, err := idb.QueryContext(ctx, q(`SELECT {shortUrlId}, {user}, {imageIdentifier}, {extension}, {query} FROM {shorturl}`))
	if err != nil {
		return fmt.Errorf("storage: import: read shorturl: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, user, image, query string
		var ext sql.NullString
		if err := rows.Scan(&id, &user, &image, &ext, &query); err != nil {
			return fmt.Errorf("storage: import: read shorturl: %w", err)
		}
		r.ShortURLs++
		ts, err := imboQueryTransformations(query)
		if err != nil {
			r.Failed = append(r.Failed, fmt.Sprintf("short URL %s: its query %q: %v", id, query, err))
			continue
		}
		su := ShortURL{ID: id, User: user, Image: image, Extension: ext.String, Query: ShortURLQuery(ts)}
		switch err := db.InsertShortURL(ctx, su); {
		case err == nil:
			r.ShortURLsImported++
		case errors.Is(err, ErrExist):
			if got, gerr := db.ShortURL(ctx, id); gerr != nil || got != su {
				r.Failed = append(r.Failed, fmt.Sprintf("short URL %s: the id or its image and query already stand for another short URL", id))
			}
		default:
			r.Failed = append(r.Failed, fmt.Sprintf("short URL %s: %v", id, err))
		}
	}
	return rows.Err()
}

// imboQueryTransformations returns the transformations (t[]) of a short
// URL's query as Imbo stores it: PHP-serialized, or a plain query string
// (?t[]=...) as older versions wrote.
func imboQueryTransformations(stored string) ([]string, error) {
	if !strings.HasPrefix(stored, "a:") {
		vals, err := url.ParseQuery(strings.TrimPrefix(stored, "?"))
		if err != nil {
			return nil, err
		}
		return append(vals["t[]"], vals["t"]...), nil
	}
	p := phpReader{s: stored}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a PHP array")
	}
	var out []string
	if list, ok := top["t"].(map[string]any); ok {
		for i := 0; i < len(list); i++ {
			s, ok := list[strconv.Itoa(i)].(string)
			if !ok {
				return nil, fmt.Errorf("transformation %d is not a string", i)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// phpReader reads the values PHP's serialize writes: arrays (a:n:{...}),
// strings (s:len:"...";, len in bytes), integers, floats, booleans and
// null. Array keys become strings.
type phpReader struct {
	s string
	i int
}

func (p *phpReader) fail(what string) error {
	return fmt.Errorf("PHP serialized data: %s at byte %d", what, p.i)
}

// until returns the text up to the next stop byte and moves past it.
func (p *phpReader) until(stop byte) (string, error) {
	j := strings.IndexByte(p.s[p.i:], stop)
	if j < 0 {
		return "", p.fail(fmt.Sprintf("no %q", stop))
	}
	v := p.s[p.i : p.i+j]
	p.i += j + 1
	return v, nil
}

func (p *phpReader) value() (any, error) {
	if p.i+2 > len(p.s) {
		return nil, p.fail("unexpected end")
	}
	kind := p.s[p.i]
	if kind == 'N' && p.s[p.i+1] == ';' {
		p.i += 2
		return nil, nil
	}
	if p.s[p.i+1] != ':' {
		return nil, p.fail("bad type")
	}
	p.i += 2
	switch kind {
	case 'i', 'd', 'b':
		v, err := p.until(';')
		if err != nil {
			return nil, err
		}
		if kind == 'b' {
			return v == "1", nil
		}
		if kind == 'd' {
			return strconv.ParseFloat(v, 64)
		}
		return strconv.ParseInt(v, 10, 64)
	case 's':
		n, err := p.length(':')
		if err != nil {
			return nil, err
		}
		if p.i+n+3 > len(p.s) || p.s[p.i] != '"' || p.s[p.i+n+1] != '"' || p.s[p.i+n+2] != ';' {
			return nil, p.fail("bad string")
		}
		v := p.s[p.i+1 : p.i+n+1]
		p.i += n + 3
		return v, nil
	case 'a':
		n, err := p.length(':')
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.s) || p.s[p.i] != '{' {
			return nil, p.fail("no {")
		}
		p.i++
		out := make(map[string]any, n)
		for range n {
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = v
		}
		if p.i >= len(p.s) || p.s[p.i] != '}' {
			return nil, p.fail("no }")
		}
		p.i++
		return out, nil
	}
	return nil, p.fail(fmt.Sprintf("type %q", kind))
}

// length reads a non-negative count ended by stop.
func (p *phpReader) length(stop byte) (int, error) {
	v, err := p.until(stop)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > len(p.s) {
		return 0, p.fail("bad length")
	}
	return n, nil
}
