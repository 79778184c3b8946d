package e2e

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestQuotasTwoInstances runs two instances on one PostgreSQL schema and
// one blob directory with a quota of 50 images and 3 cached variants per
// image: 8 uploaders racing through both instances store exactly 50
// images (every other upload answers 403 naming the quota, and its blob,
// if written, goes), fsck finds the usage exact, a user's own quota set
// through one instance holds at once on the other, and an image's renders
// stop being cached at its variant quota.
func TestQuotasTwoInstances(t *testing.T) {
	const quota = 50
	dsn := postgresDSN(t)
	blobDir := t.TempDir()
	user := uniqueName("quota")
	k := key{Public: user, Private: "private-" + user}
	admin := key{Public: "admin-" + user, Private: "admin-private-" + user}
	cfg := fmt.Sprintf(`database: %q
storage: %q
quotas:
  images: %d
  variantsPerImage: 3
`, dsn, "file://"+blobDir, quota) + readWriteKey(k, user) + fmt.Sprintf(`    - publicKey: %s
      privateKey: %s
      rules:
        - users: "*"
          group: all
`, admin.Public, admin.Private)
	a := startServer(t, cfg)
	b := startServer(t, cfg)
	images := "/users/" + user + "/images"
	full := fmt.Sprintf("Quota exceeded: %d images of %d (quotas.images)", quota, quota)

	var ids []string
	t.Run("RacingUploaders", func(t *testing.T) {
		const writers, each = 8, 10
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			created []string
			refused int
			errs    []error
		)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					s := []*server{a, b}[(w+i)%2]
					img := testPNG(t, 24+w, 16+i, byte(w*each+i))
					status, body, header, err := rawDo(client, http.MethodPost, s.URL+images, img, func(r *http.Request) { signWrite(r, k) })
					var e struct {
						Error struct {
							Message string `json:"message"`
							Code    int    `json:"serviceErrorCode"`
						} `json:"error"`
					}
					_ = json.Unmarshal(body, &e)
					mu.Lock()
					switch {
					case err == nil && status == http.StatusCreated:
						created = append(created, md5Hex(img))
					case err == nil && status == http.StatusForbidden && e.Error.Message == full && e.Error.Code == 210 &&
						header.Get("X-Service-Error-Message") == full:
						refused++
					default:
						errs = append(errs, fmt.Errorf("writer %d upload %d through %s: %d %s %v", w, i, s.URL, status, body, err))
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errors.Join(errs...))
		}
		if len(created) != quota || refused != writers*each-quota {
			t.Fatalf("%d uploads stored and %d refused of %d; the quota is %d", len(created), refused, writers*each, quota)
		}
		ids = created
	})

	t.Run("UsageIsExact", func(t *testing.T) {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var rows, counted int
		if err := db.QueryRow("SELECT COUNT(*) FROM images WHERE user_name = $1", user).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT images FROM image_counts WHERE user_name = $1", user).Scan(&counted); err != nil {
			t.Fatal(err)
		}
		if rows != quota || counted != quota {
			t.Fatalf("%d image rows, usage row %d; the quota is %d", rows, counted, quota)
		}
		for _, s := range []*server{a, b} {
			var u struct {
				NumImages int `json:"numImages"`
				Quota     struct {
					Images int `json:"images"`
				} `json:"quota"`
				Usage struct {
					Images int `json:"images"`
				} `json:"usage"`
			}
			r := s.get(t, "/users/"+user, k)
			wantStatus(t, "GET user", r, http.StatusOK)
			r.JSON(t, &u)
			if u.NumImages != quota || u.Usage.Images != quota || u.Quota.Images != quota {
				t.Fatalf("GET /users/%s through %s: %s", user, s.URL, r)
			}
		}
		// The refused uploads whose blob was written (the commit refused
		// them) are queued and go; none is left once the collectors ran.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			blobs, err := filepath.Glob(filepath.Join(blobDir, "images", user, "*"))
			if err != nil {
				t.Fatal(err)
			}
			if len(blobs) == quota {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d image blobs left, want %d", len(blobs), quota)
			}
		}
		out, errOut, err := runCLI(t, nil, "fsck", "--json", "--grace", "1ns", "--config", a.Config, "--data", a.DataDir)
		if err != nil {
			t.Fatalf("fsck after the race: %v\n%s%s", err, out, errOut)
		}
		var report struct {
			Users           int `json:"users"`
			UsageMismatches struct {
				Count int `json:"count"`
			} `json:"usageMismatches"`
		}
		if err := json.Unmarshal([]byte(out), &report); err != nil || report.Users < 1 || report.UsageMismatches.Count != 0 {
			t.Fatalf("fsck report: %v\n%s", err, out)
		}
	})

	t.Run("OwnQuotaAcrossInstances", func(t *testing.T) {
		r := b.writeJSON(t, http.MethodPut, "/users/"+user+"/quota", map[string]any{"images": quota + 2}, admin)
		wantStatus(t, "PUT quota through b", r, http.StatusOK)
		for i := range 2 {
			wantStatus(t, "upload through a under the raised quota", a.write(t, http.MethodPost, images, testPNG(t, 50, 40, byte(i)), k), http.StatusCreated)
		}
		r = a.write(t, http.MethodPost, images, testPNG(t, 50, 40, 9), k)
		a.checkError(t, "upload past the raised quota", r, http.StatusForbidden,
			fmt.Sprintf("Quota exceeded: %d images of %d (quotas.images)", quota+2, quota+2))
		var q struct {
			Override struct {
				Images *int `json:"images"`
			} `json:"override"`
		}
		r = a.get(t, "/users/"+user+"/quota", admin)
		wantStatus(t, "GET quota through a", r, http.StatusOK)
		r.JSON(t, &q)
		if q.Override.Images == nil || *q.Override.Images != quota+2 {
			t.Fatalf("GET quota through a: %s", r)
		}
	})

	t.Run("VariantQuotaStopsCaching", func(t *testing.T) {
		id := ids[0]
		fetch := func(s *server, width int) string {
			t.Helper()
			r := s.get(t, fmt.Sprintf("%s/%s.png?t[]=resize:width=%d", images, id, width), k)
			wantStatus(t, fmt.Sprintf("render of width %d", width), r, http.StatusOK)
			if _, w, _ := decodeSize(t, "render", r.Body); w != width {
				t.Fatalf("render of width %d is %d wide", width, w)
			}
			return r.Header.Get("X-Service-TransformationCache")
		}
		for i := range 6 {
			if got := fetch([]*server{a, b}[i%2], 10+i); got != "Miss" {
				t.Fatalf("first render of width %d: %s", 10+i, got)
			}
		}
		for i := range 6 {
			want := "Hit"
			if i >= 3 {
				want = "Miss" // answered, never cached: the image has its 3
			}
			if got := fetch([]*server{b, a}[i%2], 10+i); got != want {
				t.Errorf("second render of width %d: %s, want %s", 10+i, got, want)
			}
		}
		var list struct {
			Variants []struct {
				Chain string `json:"chain"`
			} `json:"variants"`
		}
		r := a.get(t, images+"/"+id+"/variants", k)
		wantStatus(t, "variants", r, http.StatusOK)
		r.JSON(t, &list)
		if len(list.Variants) != 3 {
			t.Fatalf("the image has %d cached variants, want 3: %s", len(list.Variants), r)
		}
		for _, v := range list.Variants {
			if !strings.HasPrefix(v.Chain, "resize:") {
				t.Errorf("variant %q", v.Chain)
			}
		}
		// A user's own, higher variant quota lets two more in.
		r = a.writeJSON(t, http.MethodPut, "/users/"+user+"/quota", map[string]any{"images": quota + 2, "variantsPerImage": 5}, admin)
		wantStatus(t, "PUT quota", r, http.StatusOK)
		for i := 3; i < 6; i++ {
			fetch(b, 10+i)
		}
		want := map[int]string{13: "Hit", 14: "Hit", 15: "Miss"}
		for w, c := range want {
			if got := fetch(a, w); got != c {
				t.Errorf("render of width %d under a quota of 5: %s, want %s", w, got, c)
			}
		}
	})
}
