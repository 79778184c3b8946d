package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCLIVariations: with variations off, an image is served from its
// original and `vitrine variations` refuses to run; with them on (the
// default), the command builds the copies of the image stored before and
// reports them as JSON, a second run finds nothing left to do, the server
// serves a reducing chain from a copy (X-Service-Source), and deleting the
// image deletes the copies' blobs.
func TestCLIVariations(t *testing.T) {
	user := uniqueName("variations")
	k := key{Public: user, Private: "private-" + user}
	data := t.TempDir()
	s := startServerData(t, readWriteKey(k, user)+"variations:\n  enabled: false\n", data)
	jpg := testJPEG(t, 1600, 1200, 3)
	id := md5Hex(jpg)
	wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/"+user+"/images", jpg, k), http.StatusCreated)
	r := s.get(t, "/users/"+user+"/images/"+id+".jpg?t[]=resize:width=300", k)
	wantStatus(t, "get", r, http.StatusOK)
	if got := r.Header.Get("X-Service-Source"); got != "original" {
		t.Fatalf("Source %q with variations off, want original", got)
	}
	s.Stop()
	if out, errOut, err := runCLI(t, nil, "variations", "--config", s.Config, "--data", data); err == nil ||
		!strings.Contains(errOut, "variations.enabled: false") {
		t.Fatalf("variations with them off: %v\n%s%s", err, out, errOut)
	}

	var sum struct{ Images, Built, Variations, Bytes int }
	out, errOut, err := runCLI(t, nil, "variations", "--data", data, "--user", user)
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil || sum.Images != 1 || sum.Built != 1 ||
		sum.Variations != 3 || sum.Bytes <= 0 {
		t.Fatalf("variations: %v %+v\n%s%s", err, sum, out, errOut)
	}
	out, _, err = runCLI(t, nil, "variations", "--data", data)
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil || sum.Images != 0 {
		t.Fatalf("second run: %v\n%s", err, out)
	}

	s = startServerData(t, readWriteKey(k, user), data)
	// Width 250 of 1600 decodes at 1/4: the 400 px copy.
	r = s.get(t, "/users/"+user+"/images/"+id+".jpg?t[]=resize:width=250", k)
	wantStatus(t, "get", r, http.StatusOK)
	if got := r.Header.Get("X-Service-Source"); got != "variation-400" {
		t.Fatalf("Source %q, want variation-400", got)
	}
	dir := filepath.Join(data, "images", "variations", user)
	if files, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(files) != 3 {
		t.Fatalf("variation blobs %v, want 3", files)
	}
	wantStatus(t, "delete", s.write(t, http.MethodDelete, "/users/"+user+"/images/"+id, nil, k), http.StatusOK)
	deadline := time.Now().Add(20 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		if len(files) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("variation blobs left after the delete: %v", files)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
