package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
)

// TestTusConcurrentPatch: two instances share the database and the blob
// store. A PATCH from offset 0 on A is writing its first part when a
// PATCH from offset 0 on B commits the first two parts; A's part then
// loses (409, service code 145) with nothing of it kept, B's stand, and
// the rest sent from B's offset finishes the image with the file's bytes.
func TestTusConcurrentPatch(t *testing.T) {
	a := newEnv(t, tusConfig())
	b := a.otherInstance(tusConfig(), func(d *api.Deps) { d.Usage = a.usage })

	const part = 64 << 10
	img := noisePNG(t, 400, 300)
	if len(img) < 3*part {
		t.Fatalf("test image of %d bytes spans too few parts", len(img))
	}
	path := a.createUpload("", len(img))
	// The blob store writes a part to a temporary file next to it and
	// renames it when whole: that file shows A's part is being written.
	partDir := filepath.Join(a.dir, "images", "uploads", filepath.Base(path), "part")

	// A: a PATCH of the first part, half of which is sent, then held. It
	// goes to A's server straight: the API reference check of the test
	// server reads a body whole before passing it on.
	hsA := httptest.NewServer(a.srv)
	defer hsA.Close()
	body, send := io.Pipe()
	req, err := http.NewRequest(http.MethodPatch, hsA.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = part
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	for k, v := range map[string]string{"Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream",
		"Upload-Offset": "0", "X-Service-PublicKey": userKey, "X-Service-Authenticate-Timestamp": ts,
		"X-Service-Authenticate-Signature": hmacHex(userPriv, http.MethodPatch+"|"+hsA.URL+path+"|"+userKey+"|"+ts)} {
		req.Header.Set(k, v)
	}
	answer := make(chan response, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- response{}
			return
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		answer <- response{res, data}
	}()
	if _, err := send.Write(img[:part/2]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for writing := false; !writing; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("A's PATCH never started writing its first part")
		}
		entries, _ := os.ReadDir(partDir)
		for _, e := range entries {
			writing = writing || (strings.HasPrefix(e.Name(), "00000000000000000000.") && strings.HasSuffix(e.Name(), ".tmp"))
		}
	}

	// B: the first two parts, from the same offset, while A writes.
	r := b.tusReq(http.MethodPatch, path, "", img[:2*part], "Upload-Offset", "0")
	if r.StatusCode != http.StatusNoContent || r.Header.Get("Upload-Offset") != strconv.Itoa(2*part) {
		t.Fatalf("PATCH on B: %d offset %q %s", r.StatusCode, r.Header.Get("Upload-Offset"), r.body)
	}
	if _, err := send.Write(img[part/2 : part]); err != nil {
		t.Fatal(err)
	}
	send.Close()
	r = <-answer
	if r.Response == nil {
		t.Fatal("PATCH on A: no answer")
	}
	wantRefusal(t, "PATCH on A", r, http.StatusConflict, 145, "Another request wrote this part of the upload first")

	hr := a.tusReq(http.MethodHead, path, "", nil)
	if hr.Header.Get("Upload-Offset") != strconv.Itoa(2*part) {
		t.Fatalf("HEAD after both: offset %q, want %d", hr.Header.Get("Upload-Offset"), 2*part)
	}
	r = a.tusReq(http.MethodPatch, path, "", img[2*part:], "Upload-Offset", strconv.Itoa(2*part))
	if r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
		t.Fatalf("last PATCH: %d %s", r.StatusCode, r.body)
	}
	if id := r.Header.Get("X-Service-ImageIdentifier"); id != md5Hex(img) {
		t.Fatalf("last PATCH named %q, want %s", id, md5Hex(img))
	}
	got, err := a.blobs.Get(t.Context(), a.blobKey("alice", md5Hex(img)))
	if err != nil || string(got) != string(img) {
		t.Fatalf("stored bytes differ from the upload (%v)", err)
	}
	if keys := a.uploadParts(); len(keys) != 0 {
		t.Fatalf("after the upload the store still holds %v", keys)
	}
}
