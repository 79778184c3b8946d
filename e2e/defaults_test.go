package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstStartDefaults: on the embedded default (no configuration) the
// admin key printed at first start can create keys, because access control
// is stored in the database; filters load from <data>/filters, which the
// start creates and logs.
func TestFirstStartDefaults(t *testing.T) {
	s := startServer(t, "")
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	t.Run("the admin key creates a key", func(t *testing.T) {
		r := s.writeJSON(t, http.MethodPut, "/keys/editor", map[string]string{"privateKey": "editor-private"}, admin)
		checkStatus(t, "PUT /keys/editor", r, http.StatusCreated)
		var list struct {
			Keys []struct {
				PublicKey, Source string
				Mutable           bool
			}
			Mutable bool
		}
		r = s.get(t, "/keys", admin)
		wantStatus(t, "GET /keys", r, http.StatusOK)
		r.JSON(t, &list)
		got := map[string]string{}
		for _, k := range list.Keys {
			got[k.PublicKey] = k.Source
			if !k.Mutable {
				t.Errorf("key %s is not mutable: %s", k.PublicKey, r.Body)
			}
		}
		if !list.Mutable || got["admin"] != "database" || got["editor"] != "database" {
			t.Errorf("GET /keys: %s", r.Body)
		}
	})
	t.Run("filters folder", func(t *testing.T) {
		dir := filepath.Join(s.DataDir, "filters")
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v", dir, err)
		}
		if log := s.Stderr.String(); !strings.Contains(log, `"msg":"filters folder","dir":"`+dir+`"`) {
			t.Errorf("the start does not log the filters folder %s:\n%s", dir, log)
		}
		r := s.write(t, http.MethodPost, "/filters/reload", nil, admin)
		wantStatus(t, "POST /filters/reload", r, http.StatusOK)
	})
}

// TestCLISignCurl: the URL `vitrine sign` prints for a query typed with
// spaces and `t[]` works as curl's argument, signature included.
func TestCLISignCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl on this machine")
	}
	dir := t.TempDir()
	alice := key{Public: "alice", Private: printedPrivate(t, mustCLI(t, nil, "keys", "add", "alice", "--group", "read-write", "--data", dir))}
	s := startServerData(t, "", dir)
	img := testPNG(t, 40, 30, 7)
	wantStatus(t, "upload", s.write(t, http.MethodPost, "/users/alice/images", img, alice), http.StatusCreated)
	u := strings.TrimSpace(mustCLI(t, nil, "sign", "--private", alice.Private,
		s.URL+"/users/alice/images/"+md5Hex(img)+".png?t[]=text:text=Hello world&t[]=thumbnail:width=20,height=20"))
	if strings.ContainsAny(u, " []") {
		t.Errorf("printed URL %s is not percent-encoded", u)
	}
	out, err := exec.Command(curl, "-sS", "-o", os.DevNull, "-w", "%{http_code}", u).CombinedOutput()
	if err != nil || string(out) != "200" {
		t.Errorf("curl %s: %v %s", u, err, out)
	}
}

// TestImageLimitsNamed: an upload over the dimension limits is refused
// with its size and the limits.
func TestImageLimitsNamed(t *testing.T) {
	admin := key{Public: "admin", Private: "admin-private"}
	s := startServer(t, adminOnlyConfig+"limits:\n  maxWidth: 50\n")
	r := s.write(t, http.MethodPost, "/users/alice/images", testPNG(t, 100, 40, 1), admin)
	s.checkError(t, "upload over maxWidth", r, http.StatusRequestEntityTooLarge,
		"Image too large: 100x40 pixels; the limits are 50x32768 and 100000000 pixels in all")
}
