package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// backupSummary is what `vitrine backup --json` and `vitrine restore
// --json` print.
type backupSummary struct {
	Snapshot    string    `json:"snapshot"`
	Taken       time.Time `json:"taken"`
	Until       time.Time `json:"until"`
	Blobs       int       `json:"blobs"`
	Copied      int       `json:"copied"`
	CopiedBytes int64     `json:"copiedBytes"`
	Failed      []string  `json:"failed"`
	Error       string    `json:"error"`
	Check       *struct {
		Images int64 `json:"images"`
	} `json:"check"`
}

func backupCLI(t *testing.T, args ...string) backupSummary {
	t.Helper()
	out := mustCLI(t, nil, args...)
	var s backupSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("vitrine %v --json: %v\n%s", args, err, out)
	}
	return s
}

// acked is an upload or a delete the server acknowledged: when it was
// sent and when its answer arrived.
type acked struct {
	id         string
	body       []byte // nil for a delete
	sent, done time.Time
}

// TestBackupWhileUploading backs up the embedded default while four
// writers upload and a fifth deletes, restores the snapshot into an empty
// data folder and serves it: every upload acknowledged before the
// snapshot point answers with its bytes, every delete acknowledged before
// it stays deleted; a second backup copies only the blobs that are new,
// and a third, with nothing new, none.
func TestBackupWhileUploading(t *testing.T) {
	k := key{Public: "backer", Private: "backer-private"}
	cfg := fmt.Sprintf(`blobQueue:
  interval: 200ms
accessControl:
  keys:
    - publicKey: %s
      privateKey: %s
      rules:
        - users: "*"
          group: all
`, k.Public, k.Private)
	data := t.TempDir()
	s := startServerData(t, cfg, data)
	const user = "alice"
	first := uploadMany(t, s, user, k, 40, func(i int) []byte { return testJPEG(t, 64+i, 48, byte(i)) })
	bodies := map[string][]byte{}
	for i, id := range first {
		bodies[id] = testJPEG(t, 64+i, 48, byte(i))
	}

	var mu sync.Mutex
	var log []acked
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := testJPEG(t, 100+i%50, 60+w, byte(i*7+w))
				body = append(body, byte(w), byte(i), byte(i>>8)) // distinct bytes, distinct ids
				sent := time.Now()
				status, _, _, err := rawDo(client, http.MethodPost, s.URL+"/users/"+user+"/images", body,
					func(r *http.Request) { signWrite(r, k) })
				if err != nil || status != http.StatusCreated {
					t.Errorf("upload during the backup: %d %v", status, err)
					return
				}
				mu.Lock()
				log = append(log, acked{id: md5Hex(body), body: body, sent: sent, done: time.Now()})
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for _, id := range first[:20] {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			sent := time.Now()
			r := s.write(t, http.MethodDelete, "/users/"+user+"/images/"+id, nil, k)
			if r.Status != http.StatusOK {
				t.Errorf("delete during the backup: %s", r)
				return
			}
			mu.Lock()
			log = append(log, acked{id: id, sent: sent, done: time.Now()})
			mu.Unlock()
		}
	})
	time.Sleep(300 * time.Millisecond)
	dest := filepath.Join(t.TempDir(), "backup")
	one := backupCLI(t, "backup", "--json", "--config", s.Config, "--data", data, dest)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if one.Error != "" || len(one.Failed) > 0 || one.Copied == 0 || one.Copied != one.Blobs {
		t.Fatalf("first backup: %+v", one)
	}

	// What the snapshot must hold: the last state of each image
	// acknowledged before Taken. An image changed while the snapshot was
	// being taken (a change sent before Until and answered after Taken)
	// may be either way, and is not checked.
	if !one.Until.After(one.Taken) {
		t.Fatalf("first backup: taken %s, until %s", one.Taken, one.Until)
	}
	want := map[string][]byte{}
	for id, b := range bodies {
		want[id] = b
	}
	unsure := map[string]bool{}
	before, after := 0, 0
	for _, a := range log {
		switch {
		case a.done.Before(one.Taken):
			before++
			if a.body == nil {
				delete(want, a.id)
			} else {
				want[a.id] = a.body
			}
		case a.sent.Before(one.Until):
			unsure[a.id] = true
		default:
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d changes acknowledged before the snapshot and %d begun after: the backup did not run during the writes", before, after)
	}

	restored := t.TempDir()
	r := backupCLI(t, "restore", "--json", "--config", s.Config, "--data", restored, dest)
	if r.Error != "" || len(r.Failed) > 0 || r.Snapshot != one.Snapshot || r.Check == nil {
		t.Fatalf("restore: %+v", r)
	}
	if _, _, err := runCLI(t, nil, "restore", "--config", s.Config, "--data", restored, dest); err == nil {
		t.Fatal("a restore into a store that is not empty succeeded")
	}
	s2 := startServerData(t, cfg, restored)
	for id, b := range want {
		if unsure[id] {
			continue
		}
		got := s2.get(t, "/users/"+user+"/images/"+id, k)
		if got.Status != http.StatusOK || !bytes.Equal(got.Body, b) {
			t.Fatalf("restored image %s: %d, %d bytes; want the %d bytes uploaded", id, got.Status, len(got.Body), len(b))
		}
	}
	for _, a := range log {
		if a.body != nil && !a.sent.Before(one.Until) && !unsure[a.id] {
			wantStatus(t, "image uploaded after the snapshot", s2.get(t, "/users/"+user+"/images/"+a.id, k), http.StatusNotFound)
		}
		if a.body == nil && a.done.Before(one.Taken) && !unsure[a.id] {
			wantStatus(t, "image deleted before the snapshot", s2.get(t, "/users/"+user+"/images/"+a.id, k), http.StatusNotFound)
		}
	}
	t.Logf("snapshot %s: %d blobs; %d changes before it, %d while it was taken (%s), %d after; %d images restored",
		one.Snapshot, one.Blobs, before, len(unsure), one.Until.Sub(one.Taken), after, len(want))

	// A second backup copies the blobs the first did not hold; a third,
	// with nothing new, none.
	more := uploadMany(t, s, user, k, 5, func(i int) []byte { return testPNG(t, 30+i, 20, byte(i)) })
	two := backupCLI(t, "backup", "--json", "--config", s.Config, "--data", data, dest)
	three := backupCLI(t, "backup", "--json", "--config", s.Config, "--data", data, dest)
	ctx := context.Background()
	b, err := storage.OpenBlobs(ctx, "file://"+filepath.ToSlash(dest))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m1, err := storage.ReadManifest(ctx, b, one.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := storage.ReadManifest(ctx, b, two.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, x := range m1.Blobs {
		held[x.SHA256] = true
	}
	fresh := map[string]bool{}
	for _, x := range m2.Blobs {
		if !held[x.SHA256] {
			fresh[x.SHA256] = true
		}
	}
	if two.Copied != len(fresh) || two.Copied < len(more) || two.Copied >= two.Blobs {
		t.Fatalf("second backup copied %d of %d blobs; %d are not in the first (at least the %d uploaded since)", two.Copied, two.Blobs, len(fresh), len(more))
	}
	if three.Copied != 0 || three.Blobs > two.Blobs {
		t.Fatalf("third backup, nothing new: copied %d of %d blobs (second: %d)", three.Copied, three.Blobs, two.Blobs)
	}
}

// TestBackupPostgresToMariaDB backs up a store on PostgreSQL while it
// takes uploads and restores it into an empty MariaDB database and blob
// folder: every image acknowledged before the snapshot answers with its
// bytes, and a database key (sealed with the shared secret) still signs.
func TestBackupPostgresToMariaDB(t *testing.T) {
	admin := key{Public: "admin", Private: "admin-private"}
	common := fmt.Sprintf("secret: shared-by-both\naccessControl:\n  keys:\n    - publicKey: %s\n      privateKey: %s\n      rules: [{users: [\"*\"], group: all}]\n", admin.Public, admin.Private)
	src := fmt.Sprintf("database: %q\nstorage: %q\n%s", postgresDSN(t), "file://"+t.TempDir(), common)
	s := startServer(t, src)
	out := mustCLI(t, nil, "keys", "add", "dbkey", "--users", "bob", "--group", "read-write", "--config", s.Config, "--data", s.DataDir)
	dbKey := key{Public: "dbkey", Private: printedPrivate(t, out)}
	bodies := map[string][]byte{}
	for i := range 30 {
		b := testJPEG(t, 40+i, 30, byte(i))
		wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/bob/images", b, admin), http.StatusCreated)
		bodies[md5Hex(b)] = b
	}
	dest := filepath.Join(t.TempDir(), "backup")
	one := backupCLI(t, "backup", "--json", "--config", s.Config, "--data", s.DataDir, dest)
	if one.Error != "" || one.Blobs < 30 || !one.Until.After(one.Taken) {
		t.Fatalf("backup of PostgreSQL: %+v", one)
	}
	// After the snapshot: not in it.
	late := testPNG(t, 21, 13, 9)
	wantStatus(t, "upload after the backup", s.write(t, http.MethodPost, "/users/bob/images", late, admin), http.StatusCreated)

	dst := fmt.Sprintf("database: %q\nstorage: %q\n%s", mysqlDSN(t), "file://"+t.TempDir(), common)
	dstFile := filepath.Join(t.TempDir(), "vitrine.yaml")
	if err := os.WriteFile(dstFile, []byte(dst), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	r := backupCLI(t, "restore", "--json", "--config", dstFile, "--data", data, dest)
	if r.Error != "" || r.Check == nil || r.Check.Images != 30 {
		t.Fatalf("restore into MariaDB: %+v", r)
	}
	if _, _, err := runCLI(t, nil, "restore", "--config", dstFile, "--data", data, dest); err == nil {
		t.Fatal("a second restore into the same (now full) store succeeded")
	}
	m := startServerData(t, dst, data)
	for id, b := range bodies {
		got := m.get(t, "/users/bob/images/"+id, dbKey)
		if got.Status != http.StatusOK || !bytes.Equal(got.Body, b) {
			t.Fatalf("restored image %s: %s", id, got)
		}
	}
	wantStatus(t, "the image uploaded after the snapshot", m.get(t, "/users/bob/images/"+md5Hex(late), admin), http.StatusNotFound)
}
