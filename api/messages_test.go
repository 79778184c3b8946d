package api_test

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMessagesSayWhatToDo: each refusal of authentication, access control
// and the request's syntax starts with Imbo's phrase, keeps its status and
// code, and then says what was wrong and what to do; api/README.md's
// message table is these messages, row for row (`…` the part that varies).
func TestMessagesSayWhatToDo(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 20, 10, 3))
	img := pngImage(t, 8, 8, 4)
	stamp := func(d time.Duration) string { return time.Now().Add(d).UTC().Format("2006-01-02T15:04:05Z") }
	upload := func(headers ...string) response {
		return e.request(http.MethodPost, e.url+"/users/alice/images", img, append([]string{"X-Service-PublicKey", userKey}, headers...)...)
	}
	const (
		noKey     = `Permission denied (public key): no public key was given and the path's user "…" is not a key; send X-Service-PublicKey or publicKey= naming your key, and `
		readHint  = `accessToken=, the URL signed with its private key (vitrine sign prints it)`
		notGrant  = `Permission denied (public key): the access rules of key "…" do not grant …`
		grantHint = `; use a key that holds it, or add a rule that grants it (POST /keys/…/access)`
		expired   = `Timestamp has expired: … is more than 120 seconds before the server's time, …; sign with the current time`
		ahead     = `Timestamp has expired: … is in the future, more than 120 seconds after the server's time, …; check the client's clock`
		bearer    = `Unknown upload token: the Bearer credential is not an upload token (those start with vut_); issue one with POST /users/…/uploadtokens, or sign the upload instead`
	)
	type messageCase struct {
		name   string
		send   func() response
		status int
		code   int
		msg    string // as in api/README.md, `…` for what varies
	}
	cases := []messageCase{
		{"no key, a read", func() response { return e.get(e.url + "/users/bob/images") }, 400, 0, noKey + readHint},
		{"no key, a write", func() response { return e.request(http.MethodDelete, e.url+"/users/bob/images/"+id, nil) }, 400, 0,
			noKey + "sign the request with its private key (vitrine sign prints the headers)"},
		{"an unknown key", func() response { return e.get(e.url+"/users/alice/images", "X-Service-PublicKey", "nobody") }, 400, 0,
			`Permission denied (public key): unknown public key "…" (…); check the key's name, or create it (vitrine keys add, or PUT /keys/<publicKey>)`},
		{"an unknown key in the query", func() response { return e.get(e.tokenURL("/users/alice/images?publicKey=nobody", "x")) }, 400, 0,
			`Permission denied (public key): unknown public key "…" (…); check the key's name, or create it (vitrine keys add, or PUT /keys/<publicKey>)`},
		{"a read-only key deleting", func() response {
			return e.signed(http.MethodDelete, "/users/alice/images/"+id, roKey, roPriv, nil)
		}, 400, 0, notGrant + ` on user "…"` + grantHint},
		{"a service-wide route", func() response { return e.get(e.tokenURL("/blocklist?publicKey="+userKey, userPriv)) }, 400, 0,
			notGrant + ` on every user ("*", which this route needs)` + grantHint},
		{"a route without a user", func() response { return e.get(e.tokenURL("/webhooks?publicKey="+userKey, userPriv)) }, 400, 0,
			notGrant + grantHint},
		{"no key on a route without a user", func() response { return e.get(e.url + "/groups") }, 400, 0,
			"Missing public key: send X-Service-PublicKey or publicKey= naming your key, and " + readHint},
		{"a read without accessToken", func() response { return e.get(e.url + "/users/alice/images") }, 400, 0,
			`Missing access token: a read needs accessToken=, the HMAC-SHA256 of the URL under the private key of "…" (vitrine sign <URL> prints the URL with it)`},
		{"a wrong accessToken", func() response { return e.get(e.url + "/users/alice/images?accessToken=" + strings.Repeat("a", 64)) }, 400, 0,
			`Incorrect access token: accessToken is not the HMAC-SHA256 of this URL (without accessToken) under the private key of "…"; sign the URL exactly as it is sent, query included`},
		{"no timestamp", func() response { return upload() }, 400, 101,
			"Missing authentication timestamp: a write is signed; send X-Service-Authenticate-Timestamp (or timestamp=), the UTC time as YYYY-MM-DDTHH:MM:SSZ, and X-Service-Authenticate-Signature (or signature=)"},
		{"a timestamp in another form", func() response { return upload("X-Service-Authenticate-Timestamp", "2026-12-01 19:08:59") }, 400, 102,
			"Invalid timestamp: …; want the UTC time as YYYY-MM-DDTHH:MM:SSZ, such as …"},
		{"a timestamp 3 minutes old", func() response { return upload("X-Service-Authenticate-Timestamp", stamp(-3*time.Minute)) }, 400, 104, expired},
		{"a timestamp a day old", func() response { return upload("X-Service-Authenticate-Timestamp", stamp(-24*time.Hour)) }, 400, 104, expired},
		{"a timestamp 3 minutes ahead", func() response { return upload("X-Service-Authenticate-Timestamp", stamp(3*time.Minute)) }, 400, 104, ahead},
		{"a timestamp a day ahead", func() response { return upload("X-Service-Authenticate-Timestamp", stamp(24*time.Hour)) }, 400, 104, ahead},
		{"no signature", func() response { return upload("X-Service-Authenticate-Timestamp", stamp(0)) }, 400, 101,
			`Missing authentication signature: send X-Service-Authenticate-Signature (or signature=), the HMAC-SHA256 of "METHOD|URL|publicKey|timestamp" under the private key`},
		{"a wrong signature", func() response {
			return upload("X-Service-Authenticate-Timestamp", stamp(0), "X-Service-Authenticate-Signature", strings.Repeat("0", 64))
		}, 400, 103, `Signature mismatch: the signature is not the HMAC-SHA256 of "…|URL|…|…" under the private key of "…" for any URL in X-Service-AuthUrl; sign the URL exactly as it is sent`},
		{"Bearer hello", func() response {
			return e.request(http.MethodPost, e.url+"/users/alice/images", img, "Authorization", "Bearer hello")
		}, 401, 110, bearer},
		{"Bearer hello for a user that is not a key", func() response {
			return e.request(http.MethodPost, e.url+"/users/bob/images", img, "Authorization", "Bearer hello")
		}, 401, 110, bearer},
		{"t= instead of t[]=", func() response {
			return e.get(e.tokenURL("/users/alice/images/"+id+"?t=thumbnail:width=100", userPriv))
		}, 400, 0, "Transformations must be specifed as an array: write t[]=…, one t[] for each step"},
		{"a parameter without =", func() response {
			return e.get(e.tokenURL("/users/alice/images/"+id+"?t[]=thumbnail:width=100,height", userPriv))
		}, 400, 0, `thumbnail: Invalid value for width: "100,height" is not an integer; the value ran on past ",height", which has no "=": write height=<value>, or leave it out`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.send()
			msg := r.errMessage(t)
			if r.StatusCode != c.status || r.errCode(t) != c.code || !pattern(c.msg).MatchString(msg) {
				t.Errorf("%d %d %q\nwant %d %d %q", r.StatusCode, r.errCode(t), msg, c.status, c.code, c.msg)
			}
			if h := r.Header.Get("X-Service-Error-Message"); h != msg {
				t.Errorf("X-Service-Error-Message %q, want the body's message", h)
			}
		})
	}
	t.Run("api/README.md", func(t *testing.T) {
		rows := messageTable(t)
		for _, c := range cases {
			want := []string{strconv.Itoa(c.status), strconv.Itoa(c.code), c.msg}
			if !slices.ContainsFunc(rows, func(r []string) bool { return slices.Equal(r, want) }) {
				t.Errorf("no row %v in the message table", want)
			}
		}
		for _, r := range rows {
			if !slices.ContainsFunc(cases, func(c messageCase) bool {
				return c.msg == r[2] && strconv.Itoa(c.status) == r[0] && strconv.Itoa(c.code) == r[1]
			}) {
				t.Errorf("row %v of the message table is tested by no case", r)
			}
		}
	})
}

// pattern is the regular expression of a message as the table writes it:
// `…` stands for any text.
func pattern(msg string) *regexp.Regexp {
	parts := strings.Split(msg, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".+") + "$")
}

// messageTable reads api/README.md's table under "### Messages": status,
// code and message of each row (the message without its backticks, `\|`
// read as `|`).
func messageTable(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Messages\n")
	if !ok {
		t.Fatal("api/README.md has no ### Messages")
	}
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[3]), "`") {
			continue
		}
		msg := strings.Trim(strings.TrimSpace(cells[3]), "`")
		rows = append(rows, []string{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2]), strings.ReplaceAll(msg, "\x00", "|")})
	}
	if len(rows) == 0 {
		t.Fatal("api/README.md's message table has no rows")
	}
	return rows
}
