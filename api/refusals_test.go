package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRefusalsSayWhy: requests the service refuses get a message that
// names what was wrong and what is allowed, not a bare status.
func TestRefusalsSayWhy(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxBodyBytes = 4096
	e := newEnv(t, cfg)
	id := e.upload(pngImage(t, 20, 10, 3))
	img := "/users/alice/images/" + id
	userRule := "a user name is 1 to 64 characters, each a letter (a-z, A-Z), a digit, '_' or '-'"
	read := func(path string) response { return e.get(e.tokenURL(path+sep(path)+"publicKey="+adminKey, adminPriv)) }
	for _, tt := range []struct {
		name   string
		r      func() response
		status int
		msg    string // the message, or a part of it after "…"
	}{
		{"user name with a dot", func() response { return read("/users/bob.smith") }, 400,
			"Invalid user name 'bob.smith': " + userRule},
		{"user name an e-mail address", func() response { return read("/users/bob@example.com/images") }, 400,
			"Invalid user name 'bob@example.com': " + userRule},
		{"user name with a dot, image path", func() response { return read("/users/bob.smith/images/" + id + ".png") }, 400,
			"Invalid user name 'bob.smith': " + userRule},
		{"user name too long", func() response { return read("/users/" + strings.Repeat("a", 65) + "/images") }, 400,
			"Invalid user name '" + strings.Repeat("a", 65) + "': " + userRule},
		{"unknown path still 404", func() response { return read("/users/alice/nothing") }, 404, "Not Found"},
		{"unknown field", func() response { return read("/users/alice/images?fields[]=size&fields[]=nosuch") }, 400,
			"…Unknown field 'nosuch' in fields[]; the fields are added, updated, checksum,"},
		{"unknown extension", func() response { return read(img + ".bmp") }, 404,
			"Unknown extension 'bmp': this image is served as jpg, png, gif, webp, avif, jxl (jpeg is jpg), or without an extension"},
		{"body over the limit", func() response {
			return e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, make([]byte, 5000))
		}, 413, "Request body too large: 5000 bytes; the limit is 4096 bytes"},
		{"timestamp a day ahead", func() response {
			ts := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05Z")
			return e.request(http.MethodPost, e.url+"/users/alice/images", nil, "X-Service-PublicKey", userKey,
				"X-Service-Authenticate-Timestamp", ts, "X-Service-Authenticate-Signature", "00")
		}, 400, "…is in the future, more than 120 seconds after the server's time"},
		{"timestamp a day behind", func() response {
			ts := time.Now().Add(-24 * time.Hour).UTC().Format("2006-01-02T15:04:05Z")
			return e.request(http.MethodPost, e.url+"/users/alice/images", nil, "X-Service-PublicKey", userKey,
				"X-Service-Authenticate-Timestamp", ts, "X-Service-Authenticate-Signature", "00")
		}, 400, "…Timestamp has expired: "},
		{"short URL for another user", func() response {
			body := fmt.Sprintf(`{"user":"bob","imageIdentifier":%q}`, id)
			return e.signed(http.MethodPost, img+"/shorturls", userKey, userPriv, []byte(body))
		}, 400, "Missing or invalid user: the body's user is 'bob', the path's is 'alice'; they must be equal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r()
			msg := r.errMessage(t)
			ok := msg == tt.msg
			if part, found := strings.CutPrefix(tt.msg, "…"); found {
				ok = strings.Contains(msg, part)
			}
			if r.StatusCode != tt.status || !ok {
				t.Errorf("%d %q, want %d %q", r.StatusCode, msg, tt.status, tt.msg)
			}
		})
	}
	t.Run("skew named", func(t *testing.T) {
		ts := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05Z")
		r := e.request(http.MethodPost, e.url+"/users/alice/images", nil, "X-Service-PublicKey", userKey,
			"X-Service-Authenticate-Timestamp", ts, "X-Service-Authenticate-Signature", "00")
		if msg := r.errMessage(t); !strings.Contains(msg, ts+" is in the future, more than 120 seconds after the server's time") {
			t.Errorf("message %q does not name the timestamp and the allowed skew", msg)
		}
	})
	t.Run("valid names still served", func(t *testing.T) {
		for _, path := range []string{"/users/alice", "/users/alice.json", "/users/alice/images?fields[]=size", img + ".jpeg"} {
			if r := read(path); r.StatusCode != 200 {
				t.Errorf("%s: %d %s", path, r.StatusCode, r.body)
			}
		}
	})
}

// TestShortURLParamsCarryID: GET .../shorturls/<id> answers the id with
// the rest, as the list does.
func TestShortURLParamsCarryID(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 20, 10, 4))
	path := "/users/alice/images/" + id + "/shorturls"
	body := fmt.Sprintf(`{"user":"alice","imageIdentifier":%q,"query":"?t[]=thumbnail"}`, id)
	r := e.signed(http.MethodPost, path, userKey, userPriv, []byte(body))
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.body)
	}
	sid := r.json(t)["id"].(string)
	m := e.get(e.tokenURL(path+"/"+sid+"?publicKey="+userKey, userPriv)).json(t)
	if m["id"] != sid || m["user"] != "alice" || m["imageIdentifier"] != id {
		t.Errorf("GET %s/%s = %v, want id %s with user and imageIdentifier", path, sid, m, sid)
	}
}
