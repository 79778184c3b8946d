package e2e

import (
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" for creating test schemas

	"github.com/vitrine/vitrine/storage/storagetest"
)

// TestBackends runs the core scenario on every storage combination: the
// embedded default (SQLite and files), PostgreSQL, MariaDB and S3.
func TestBackends(t *testing.T) {
	t.Run("sqlite+file", func(t *testing.T) {
		t.Parallel()
		runCore(t, "", "")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		runCore(t, postgresDSN(t), "")
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		runCore(t, mysqlDSN(t), "")
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		runCore(t, "", storagetest.S3URL(t))
	})
}

// postgresDSN returns the DSN of a fresh schema on VITRINE_TEST_POSTGRES,
// or skips.
func postgresDSN(t *testing.T) string { return storagetest.PostgresDSN(t) }

// mysqlDSN returns the DSN of a fresh database on VITRINE_TEST_MYSQL, or
// skips.
func mysqlDSN(t *testing.T) string { return storagetest.MySQLDSN(t) }

// runCore starts a server on the given database and blob store ("" for the
// defaults) and runs the core scenario. The user name is unique per run, so
// runs sharing a bucket do not meet.
func runCore(t *testing.T, database, storage string) {
	user := uniqueName("e2e")
	k := key{Public: user, Private: "private-" + user}
	cfg := readWriteKey(k, user)
	if database != "" {
		cfg += fmt.Sprintf("database: %q\n", database)
	}
	if storage != "" {
		cfg += fmt.Sprintf("storage: %q\n", storage)
	}
	s := startServer(t, cfg)
	coreScenario(t, s, user, k)
}

// coreScenario: upload, fetch the original bytes, a thumbnail and a
// conversion, metadata put/post/get/delete, listing, user, short URL,
// delete, and everything gone afterwards.
func coreScenario(t *testing.T, s *server, user string, k key) {
	img := testPNG(t, 64, 48, 7)
	id := md5Hex(img)
	images := "/users/" + user + "/images"
	imagePath := images + "/" + id

	// Upload: 201 for a new image, 200 with the same identifier for the same bytes.
	r := s.write(t, http.MethodPost, images, img, k)
	wantStatus(t, "upload", r, http.StatusCreated)
	var up struct {
		ImageIdentifier string `json:"imageIdentifier"`
		Width, Height   int
		Extension       string `json:"extension"`
	}
	r.JSON(t, &up)
	if up.ImageIdentifier != id || up.Width != 64 || up.Height != 48 || up.Extension != "png" {
		t.Fatalf("upload answered %s, want identifier %s, 64x48, png", r.Body, id)
	}
	r = s.write(t, http.MethodPost, images, img, k)
	if checkStatus(t, "second upload of the same bytes", r, http.StatusOK) {
		r.JSON(t, &up)
		if up.ImageIdentifier != id {
			t.Errorf("second upload: identifier %s, want %s", up.ImageIdentifier, id)
		}
	}

	// The original comes back byte for byte.
	r = s.get(t, imagePath, k)
	wantStatus(t, "fetch original", r, http.StatusOK)
	if md5Hex(r.Body) != id {
		t.Errorf("fetch original: got %d bytes with MD5 %s, want the uploaded %d bytes", len(r.Body), md5Hex(r.Body), len(img))
	}
	if ct := r.Header.Get("Content-Type"); ct != "image/png" {
		t.Errorf("fetch original: Content-Type %q, want image/png", ct)
	}
	if w := r.Header.Get("X-Service-OriginalWidth"); w != "64" {
		t.Errorf("fetch original: X-Service-OriginalWidth %q, want 64", w)
	}

	// A thumbnail (outbound: exactly w x h), and a conversion by extension.
	r = s.get(t, imagePath+".png?t[]=thumbnail:width=20,height=20", k)
	if checkStatus(t, "thumbnail", r, http.StatusOK) {
		if f, w, h := decodeSize(t, "thumbnail", r.Body); f != "png" || w != 20 || h != 20 {
			t.Errorf("thumbnail: %s %dx%d, want png 20x20", f, w, h)
		}
	}
	r = s.get(t, imagePath+".jpg?t[]=maxSize:width=32", k)
	if checkStatus(t, "maxSize as jpg", r, http.StatusOK) {
		if f, w, h := decodeSize(t, "maxSize as jpg", r.Body); f != "jpeg" || w != 32 || h != 24 {
			t.Errorf("maxSize as jpg: %s %dx%d, want jpeg 32x24", f, w, h)
		}
	}

	// Metadata: PUT replaces, POST merges, GET reads, DELETE empties.
	meta := imagePath + "/metadata"
	r = s.writeJSON(t, http.MethodPut, meta, map[string]any{"title": "first", "tags": map[string]any{"a": 1.0}}, k)
	if checkStatus(t, "PUT metadata", r, http.StatusOK) {
		wantJSON(t, "PUT metadata", r, map[string]any{"title": "first", "tags": map[string]any{"a": 1.0}})
	}
	merged := map[string]any{"title": "second", "tags": map[string]any{"a": 1.0}, "extra": true}
	r = s.writeJSON(t, http.MethodPost, meta, map[string]any{"title": "second", "extra": true}, k)
	if checkStatus(t, "POST metadata", r, http.StatusOK) {
		wantJSON(t, "POST metadata", r, merged)
	}
	r = s.get(t, meta, k)
	if checkStatus(t, "GET metadata", r, http.StatusOK) {
		wantJSON(t, "GET metadata", r, merged)
	}

	// Listing, with metadata.
	r = s.get(t, images+"?metadata=1", k)
	if checkStatus(t, "listing", r, http.StatusOK) {
		var l listing
		r.JSON(t, &l)
		if l.Search.Hits != 1 || len(l.Images) != 1 {
			t.Errorf("listing: %s, want one image", r.Body)
		} else if e := l.Images[0]; e.ImageIdentifier != id || e.Checksum != id || e.Width != 64 || e.Height != 48 ||
			e.MimeType != "image/png" || e.User != user || !reflect.DeepEqual(e.Metadata, merged) {
			t.Errorf("listing entry: %s", r.Body)
		}
	}
	r = s.get(t, "/users/"+user, k)
	if checkStatus(t, "user", r, http.StatusOK) {
		var u struct {
			User      string `json:"user"`
			NumImages int    `json:"numImages"`
		}
		r.JSON(t, &u)
		if u.User != user || u.NumImages != 1 {
			t.Errorf("user: %s, want user %s with 1 image", r.Body, user)
		}
	}
	r = s.write(t, http.MethodDelete, meta, nil, k)
	if checkStatus(t, "DELETE metadata", r, http.StatusOK) {
		wantJSON(t, "DELETE metadata", r, map[string]any{})
	}
	r = s.get(t, meta, k)
	if checkStatus(t, "GET metadata after DELETE", r, http.StatusOK) {
		wantJSON(t, "GET metadata after DELETE", r, map[string]any{})
	}

	// A short URL reproduces extension and transformations, without a token.
	r = s.writeJSON(t, http.MethodPost, imagePath+"/shorturls", map[string]string{
		"user": user, "imageIdentifier": id, "extension": "png", "query": "t[]=thumbnail:width=10,height=10"}, k)
	wantStatus(t, "create short URL", r, http.StatusCreated)
	var short struct {
		ID string `json:"id"`
	}
	r.JSON(t, &short)
	if !regexp.MustCompile(`^[a-zA-Z0-9]{7}$`).MatchString(short.ID) {
		t.Fatalf("create short URL: id %q is not 7 letters and digits", short.ID)
	}
	r = s.do(t, http.MethodGet, "/s/"+short.ID, nil, nil)
	if checkStatus(t, "GET short URL", r, http.StatusOK) {
		if f, w, h := decodeSize(t, "short URL", r.Body); f != "png" || w != 10 || h != 10 {
			t.Errorf("short URL: %s %dx%d, want png 10x10", f, w, h)
		}
	}

	// Delete; then the image, its metadata and its short URL are gone.
	r = s.write(t, http.MethodDelete, imagePath, nil, k)
	if checkStatus(t, "DELETE image", r, http.StatusOK) {
		wantJSON(t, "DELETE image", r, map[string]any{"imageIdentifier": id})
	}
	s.checkError(t, "GET deleted image", s.get(t, imagePath, k), http.StatusNotFound, "Image not found")
	checkStatus(t, "HEAD deleted image", s.read(t, http.MethodHead, imagePath, k), http.StatusNotFound)
	checkStatus(t, "GET metadata of deleted image", s.get(t, meta, k), http.StatusNotFound)
	checkStatus(t, "GET short URL of deleted image", s.do(t, http.MethodGet, "/s/"+short.ID, nil, nil), http.StatusNotFound)
	checkStatus(t, "DELETE deleted image", s.write(t, http.MethodDelete, imagePath, nil, k), http.StatusNotFound)
	r = s.get(t, images, k)
	if checkStatus(t, "listing after delete", r, http.StatusOK) {
		var l listing
		r.JSON(t, &l)
		if l.Search.Hits != 0 || len(l.Images) != 0 {
			t.Errorf("listing after delete: %s, want no images", r.Body)
		}
	}
}

// listing is the body of an image listing.
type listing struct {
	Search struct {
		Hits, Page, Limit, Count int
	} `json:"search"`
	Images []struct {
		ImageIdentifier string         `json:"imageIdentifier"`
		Checksum        string         `json:"checksum"`
		Width           int            `json:"width"`
		Height          int            `json:"height"`
		MimeType        string         `json:"mimeType"`
		User            string         `json:"user"`
		Metadata        map[string]any `json:"metadata"`
	} `json:"images"`
}

// wantJSON checks that the body decodes to want (numbers as float64).
func wantJSON(t *testing.T, what string, r *response, want any) {
	t.Helper()
	var got any
	r.JSON(t, &got)
	if !reflect.DeepEqual(got, normalize(want)) {
		t.Errorf("%s: body %s, want %v", what, r.Body, want)
	}
}

// normalize round-trips v through the generic JSON types.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case int:
		return float64(x)
	}
	return v
}
