package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestFirstStartAdminKey: a first start without keys prints an admin key
// pair that can write and read for any user; a second start on the same data
// prints nothing new and the key still works.
func TestFirstStartAdminKey(t *testing.T) {
	data := t.TempDir()
	s := startServerData(t, "", data)
	out := s.waitOutput(t, "private key:")
	admin, ok := parseAdminKey(out)
	if !ok {
		t.Fatalf("first start printed no admin key pair; stdout:\n%s", out)
	}
	if admin.Public != "admin" || len(admin.Private) < 32 {
		t.Errorf("admin key pair %q / %q: want public key admin and a private key of at least 32 characters",
			admin.Public, admin.Private)
	}

	img := testPNG(t, 40, 30, 1)
	id := md5Hex(img)
	path := "/users/somebody/images"
	r := s.write(t, http.MethodPost, path, img, admin)
	wantStatus(t, "upload for another user with the admin key", r, http.StatusCreated)
	r = s.get(t, path+"/"+id, admin)
	wantStatus(t, "read back with the admin key", r, http.StatusOK)
	if md5Hex(r.Body) != id {
		t.Errorf("read back: got other bytes (MD5 %s, want %s)", md5Hex(r.Body), id)
	}
	// Another user too: the key holds every user.
	r = s.write(t, http.MethodPost, "/users/other/images", img, admin)
	checkStatus(t, "upload for a second user with the admin key", r, http.StatusCreated)

	s.Stop()
	s2 := startServerData(t, "", data)
	r = s2.get(t, path+"/"+id, admin)
	checkStatus(t, "read with the same admin key after a restart", r, http.StatusOK)
	// A wrong private key for admin is refused.
	bad := key{Public: "admin", Private: admin.Private + "x"}
	s2.checkError(t, "read with a wrong admin private key", s2.get(t, path+"/"+id, bad),
		http.StatusBadRequest, `Incorrect access token: accessToken is not the HMAC-SHA256 of this URL (without accessToken) `+
			`under the private key of "admin"; sign the URL exactly as it is sent, query included`)
	s2.Stop() // all output has been collected once the process is gone
	if out := s2.Stdout.String(); strings.Contains(out, adminKeyBanner) || strings.Contains(out, "private key") {
		t.Errorf("second start printed a key pair again:\n%s", out)
	}
}

// TestParseAdminKey checks the parser on the output README shows.
func TestParseAdminKey(t *testing.T) {
	out := "some log line\nCreated an admin key pair (shown only this once; it can read and write every user):\n" +
		"  public key:  admin\n  private key: 5f0c00ff\nmore\n"
	k, ok := parseAdminKey(out)
	if !ok || k.Public != "admin" || k.Private != "5f0c00ff" {
		t.Errorf("parseAdminKey = %+v, %v", k, ok)
	}
	if _, ok := parseAdminKey("public key: x\nprivate key: y\n"); ok {
		t.Error("parseAdminKey accepted output without the banner")
	}
}
