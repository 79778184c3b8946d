package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// erasureStatus is the part of GET /users/<user>/erasure the test reads.
type erasureStatus struct {
	ID            int64            `json:"id"`
	State         string           `json:"state"`
	Phase         string           `json:"phase"`
	RequestedBy   string           `json:"requestedBy"`
	Started       *string          `json:"started"`
	Counts        map[string]int64 `json:"counts"`
	ReceiptSHA256 *string          `json:"receiptSha256"`
}

// TestEraseUserKilledHalfway erases a user with 500 images (stored
// variations built, variants cached, some metadata and short URLs) on
// PostgreSQL and S3 (versitygw), killing the instance (SIGKILL) once the
// erasure has erased some images and not all: a new instance finishes it
// from where it stopped; the other user's images are byte-identical,
// `vitrine fsck` finds nothing, a listing of the bucket has no key of
// the erased user, and the receipt lists the 500 images, each once, with
// their checksums, and hashes to what the erasure and the audit log say.
func TestEraseUserKilledHalfway(t *testing.T) {
	dsn := postgresDSN(t)
	gw := startVersitygw(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	gone, kept := uniqueName("gone"), uniqueName("kept")
	k := key{Public: "eraser", Private: "eraser-private"}
	// Small batches and a short lease, so that the kill lands mid-way and
	// the next instance takes the erasure over soon; variations for small
	// images, so that the user has some.
	cfg := fmt.Sprintf(`database: %q
storage: %q
variations:
  minWidth: 16
  interval: 1s
erasure:
  batch: 20
  lease: 2s
  interval: 1s
blobQueue:
  interval: 1s
  retryMin: 1s
  retryMax: 2s
accessControl:
  keys:
    - publicKey: %s
      privateKey: %s
      rules:
        - users: "*"
          group: all
`, dsn, gw.url(), k.Public, k.Private)
	data := t.TempDir()
	s := startServerData(t, cfg, data)

	const n = 500
	ids := uploadMany(t, s, gone, k, n, func(i int) []byte { return testJPEG(t, 64+i/256, 48, byte(i)) })
	keptIDs := uploadMany(t, s, kept, k, 20, func(i int) []byte { return testPNG(t, 40, 30, byte(i)) })
	keptBytes := map[string][]byte{}
	for _, id := range keptIDs {
		r := s.get(t, "/users/"+kept+"/images/"+id, k)
		wantStatus(t, "original of the kept user", r, http.StatusOK)
		keptBytes[id] = r.Body
		wantStatus(t, "metadata of the kept user", s.writeJSON(t, http.MethodPut, "/users/"+kept+"/images/"+id+"/metadata",
			map[string]any{"keep": true}, k), http.StatusOK)
	}
	for i, id := range ids[:60] {
		if i < 30 {
			wantStatus(t, "metadata", s.writeJSON(t, http.MethodPut, "/users/"+gone+"/images/"+id+"/metadata",
				map[string]any{"n": i}, k), http.StatusOK)
		}
		if i < 10 {
			wantStatus(t, "short URL", s.writeJSON(t, http.MethodPost, "/users/"+gone+"/images/"+id+"/shorturls",
				map[string]any{"user": gone, "imageIdentifier": id, "query": "?t[]=thumbnail:width=8,height=8"}, k), http.StatusCreated)
		}
		wantStatus(t, "variant", s.get(t, "/users/"+gone+"/images/"+id+".png?t[]=thumbnail:width=8,height=8", k), http.StatusOK)
	}
	for _, id := range keptIDs[:5] {
		wantStatus(t, "variant of the kept user", s.get(t, "/users/"+kept+"/images/"+id+".png?t[]=thumbnail:width=8,height=8", k), http.StatusOK)
	}
	variations := waitBuilt(t, dsn, gone)

	r := s.write(t, http.MethodDelete, "/users/"+gone, nil, k)
	wantStatus(t, "DELETE the user", r, http.StatusAccepted)
	if loc := r.Header.Get("Location"); loc != "/users/"+gone+"/erasure" {
		t.Fatalf("Location %q", loc)
	}
	var first erasureStatus
	r.JSON(t, &first)
	again := s.write(t, http.MethodDelete, "/users/"+gone, nil, k)
	var second erasureStatus
	again.JSON(t, &second)
	if again.Status != http.StatusAccepted || second.ID != first.ID {
		t.Fatalf("second DELETE: %s; want erasure %d again", again, first.ID)
	}
	s.checkError(t, "upload while erasing", s.write(t, http.MethodPost, "/users/"+gone+"/images", testJPEG(t, 80, 60, 1), k),
		http.StatusConflict, "User '"+gone+"' is being erased; try again once the erasure is done")

	// Kill the instance once half the images are gone, or at least some
	// (the erasure may go faster than the polls).
	var atKill erasureStatus
	asked := time.Now()
	deadline := asked.Add(2 * time.Minute)
	for {
		s.get(t, "/users/"+gone+"/erasure", k).JSON(t, &atKill)
		if c := atKill.Counts["images"]; c >= n/2 && c < n || c > 0 && c < n && atKill.Phase != "images" {
			break
		}
		if atKill.State == "done" || time.Now().After(deadline) {
			t.Fatalf("no partial progress to kill the instance at: %+v", atKill)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.done
	s.stopped = true
	t.Logf("killed the instance %s after the DELETE, with %d of %d images erased", time.Since(asked).Round(time.Millisecond), atKill.Counts["images"], n)

	restarted := time.Now()
	s = startServerData(t, cfg, data)
	var done erasureStatus
	deadline = time.Now().Add(3 * time.Minute)
	for {
		s.get(t, "/users/"+gone+"/erasure", k).JSON(t, &done)
		if done.State == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the erasure did not finish after the restart: %+v", done)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("done %s after the restart", time.Since(restarted).Round(time.Millisecond))
	if done.ID != first.ID || done.Started == nil || atKill.Started == nil || *done.Started != *atKill.Started {
		t.Fatalf("finished %+v; want erasure %d, started as before the kill (%v)", done, first.ID, atKill.Started)
	}
	for kind, want := range map[string]int64{"images": n, "metadata": 30, "shortUrls": 10, "variants": 60, "variations": variations} {
		if done.Counts[kind] != want {
			t.Errorf("counts[%s] = %d, want %d (%v)", kind, done.Counts[kind], want, done.Counts)
		}
	}

	t.Run("Receipt", func(t *testing.T) {
		r := s.get(t, "/users/"+gone+"/erasure/receipt", k)
		wantStatus(t, "receipt", r, http.StatusOK)
		sum := sha256.Sum256(r.Body)
		if done.ReceiptSHA256 == nil || hex.EncodeToString(sum[:]) != *done.ReceiptSHA256 {
			t.Fatalf("receipt hashes to %x; the erasure says %v", sum, done.ReceiptSHA256)
		}
		var receipt struct {
			User        string           `json:"user"`
			RequestedBy string           `json:"requestedBy"`
			Counts      map[string]int64 `json:"counts"`
			Images      []struct {
				ID       string `json:"imageIdentifier"`
				Checksum string `json:"checksum"`
			} `json:"images"`
		}
		r.JSON(t, &receipt)
		if receipt.User != gone || receipt.RequestedBy != k.Public || receipt.Counts["images"] != n || len(receipt.Images) != n {
			t.Fatalf("receipt of %s by %s: %d images, counts %v", receipt.User, receipt.RequestedBy, len(receipt.Images), receipt.Counts)
		}
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		for _, img := range receipt.Images {
			if !want[img.ID] || img.Checksum != img.ID {
				t.Fatalf("receipt lists %+v: not an uploaded image, listed twice, or its checksum is not its bytes' MD5", img)
			}
			delete(want, img.ID)
		}
		r = s.get(t, "/audit?action=user.erase&user="+gone, k)
		var audit struct {
			Entries []struct {
				Actor  string         `json:"actor"`
				Detail map[string]any `json:"detail"`
			} `json:"entries"`
		}
		r.JSON(t, &audit)
		if len(audit.Entries) != 1 || audit.Entries[0].Actor != k.Public || audit.Entries[0].Detail["receiptSha256"] != *done.ReceiptSHA256 {
			t.Fatalf("user.erase audit entries: %s", r)
		}
	})

	t.Run("OtherUserUntouched", func(t *testing.T) {
		for id, b := range keptBytes {
			r := s.get(t, "/users/"+kept+"/images/"+id, k)
			if r.Status != http.StatusOK || !bytes.Equal(r.Body, b) {
				t.Fatalf("kept image %s: %d, %d bytes; want the %d bytes it had", id, r.Status, len(r.Body), len(b))
			}
			var md map[string]any
			s.get(t, "/users/"+kept+"/images/"+id+"/metadata", k).JSON(t, &md)
			if md["keep"] != true {
				t.Fatalf("kept image %s metadata %v", id, md)
			}
		}
		var user struct {
			NumImages int `json:"numImages"`
		}
		s.get(t, "/users/"+kept, k).JSON(t, &user)
		if user.NumImages != len(keptIDs) {
			t.Fatalf("kept user has %d images, want %d", user.NumImages, len(keptIDs))
		}
	})

	t.Run("Fsck", func(t *testing.T) {
		out := mustCLI(t, nil, "fsck", "--config", s.Config, "--data", data, "--json")
		var report storage.CheckReport
		if err := json.Unmarshal([]byte(out), &report); err != nil {
			t.Fatalf("fsck --json: %v\n%s", err, out)
		}
		if !report.Clean() || report.ErasedUsers != 1 || report.ErasedUserLeftovers.Count != 0 {
			t.Fatalf("fsck after the erasure:\n%s", out)
		}
	})

	t.Run("BucketListing", func(t *testing.T) {
		blobs, err := storage.OpenBlobs(context.Background(), gw.url())
		if err != nil {
			t.Fatal(err)
		}
		defer blobs.Close()
		var all, ofKept int
		err = blobs.List(context.Background(), "", func(b storage.BlobInfo) error {
			all++
			if strings.Contains("/"+b.Key, "/"+gone) {
				return fmt.Errorf("the bucket still holds %s", b.Key)
			}
			if strings.HasPrefix(b.Key, "images/"+kept+"/") {
				ofKept++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if ofKept != len(keptIDs) {
			t.Fatalf("the bucket holds %d image blobs of the kept user (%d keys in all); want %d", ofKept, all, len(keptIDs))
		}
	})

	t.Run("AfterwardsNothingToErase", func(t *testing.T) {
		r := s.write(t, http.MethodDelete, "/users/"+gone, nil, k)
		var last erasureStatus
		r.JSON(t, &last)
		if r.Status != http.StatusOK || last.ID != first.ID || last.State != "done" {
			t.Fatalf("DELETE once erased: %s", r)
		}
		wantStatus(t, "upload once erased", s.write(t, http.MethodPost, "/users/"+gone+"/images", testJPEG(t, 80, 60, 1), k), http.StatusCreated)
	})
}

// uploadMany uploads n images for user, made by img, four at a time,
// and returns their identifiers in the order of i.
func uploadMany(t *testing.T, s *server, user string, k key, n int, img func(i int) []byte) []string {
	t.Helper()
	bodies := make([][]byte, n)
	for i := range n {
		bodies[i] = img(i)
	}
	ids := make([]string, n)
	errs := make(chan error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				status, body, _, err := rawDo(client, http.MethodPost, s.URL+"/users/"+user+"/images", bodies[i],
					func(r *http.Request) { signWrite(r, k) })
				if err == nil && status != http.StatusCreated {
					err = fmt.Errorf("upload %d: %d %s", i, status, body)
				}
				if err != nil {
					errs <- err
					continue
				}
				ids[i] = md5Hex(bodies[i])
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

// waitBuilt waits until user has no variation job left (every
// image's stored variations are built; read from the database: the API
// does not list them) and returns how many variations user has.
func waitBuilt(t *testing.T, dsn, user string) int64 {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var jobs, built int64
		if err := db.QueryRow("SELECT (SELECT COUNT(*) FROM variation_jobs WHERE user_name = $1), "+
			"(SELECT COUNT(*) FROM variations WHERE user_name = $1)", user).Scan(&jobs, &built); err != nil {
			t.Fatal(err)
		}
		if jobs == 0 && built > 0 {
			return built
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d variation jobs of %s left after 3 minutes (%d variations built)", jobs, user, built)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
