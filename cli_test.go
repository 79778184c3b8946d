package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"vitrine/api"
	"vitrine/engine"
	"vitrine/storage"
)

// testCLI runs subcommands in-process with captured output and a fixed
// environment.
type testCLI struct {
	t   *testing.T
	env map[string]string
}

func newTestCLI(t *testing.T) *testCLI { return &testCLI{t: t, env: map[string]string{}} }

// run runs `vitrine <args>` (keys or sign) and returns its standard output.
func (tc *testCLI) run(args ...string) (string, error) {
	tc.t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return tc.env[k] }, now: time.Now}
	var err error
	switch args[0] {
	case "keys":
		err = c.keys(context.Background(), args[1:])
	case "sign":
		err = c.sign(context.Background(), args[1:])
	default:
		tc.t.Fatalf("unknown command %q", args[0])
	}
	return out.String(), err
}

// mustRun is run that fails the test on an error.
func (tc *testCLI) mustRun(args ...string) string {
	tc.t.Helper()
	out, err := tc.run(args...)
	if err != nil {
		tc.t.Fatalf("vitrine %s: %v", strings.Join(args, " "), err)
	}
	return out
}

var privateLine = regexp.MustCompile(`private key: (\S+)`)

// printedPrivate extracts the private key `keys add` or `keys rotate` printed.
func printedPrivate(t *testing.T, out string) string {
	t.Helper()
	m := privateLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no private key in output:\n%s", out)
	}
	return m[1]
}

func openTestDB(t *testing.T, dir string) *storage.DB {
	t.Helper()
	st, err := openDB(context.Background(), commonFlags{data: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st.db
}

func TestCLIKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "vitrine.yaml")
	cfgYAML := "accessControl:\n  groups:\n    uploader: [images.post]\n  keys:\n" +
		"    - {publicKey: frontend, privateKey: frontend-secret, rules: [{users: '*', group: read-only}]}\n"
	if err := os.WriteFile(cfgPath, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	data := []string{"--config", cfgPath, "--data", dir}
	tc := newTestCLI(t)
	keys := func(args ...string) []string { return append(append([]string{"keys"}, args...), data...) }
	db := openTestDB(t, dir)
	if _, err := db.PutGroup(ctx, storage.Group{Name: "dbgroup", Resources: []string{"image.get"}}); err != nil {
		t.Fatal(err)
	}

	// Flags after the positional argument, and a generated private key.
	alicePriv := printedPrivate(t, tc.mustRun(keys("add", "alice", "--group", "read-write")...))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(alicePriv) {
		t.Errorf("generated private key %q is not 32 bytes of hex", alicePriv)
	}
	if k, err := db.Key(ctx, "alice"); err != nil || k.PrivateKey != alicePriv {
		t.Errorf("stored key = %+v, %v; want the printed private key", k, err)
	}
	raw, err := db.RawPrivateKey(ctx, "alice")
	if err != nil || strings.Contains(raw, alicePriv) {
		t.Errorf("private key stored in clear: %q (%v)", raw, err)
	}
	other := printedPrivate(t, tc.mustRun(keys("add", "other")...))
	if other == alicePriv {
		t.Error("two generated private keys are equal")
	}
	tc.mustRun(keys("add", "bob", "--private", "bob-secret", "--resources", "images.get,image.get", "--users", "*")...)
	tc.mustRun(keys("add", "--group", "uploader", "--users", "a,b", "carol")...)
	tc.mustRun(keys("add", "dave", "--group", "dbgroup")...)

	wantRules := map[string][]storage.Rule{
		"alice": {{Group: "read-write", Users: []string{"alice"}}},
		"bob":   {{Resources: []string{"images.get", "image.get"}, Users: []string{"*"}}},
		"carol": {{Group: "uploader", Users: []string{"a", "b"}}},
		"dave":  {{Group: "dbgroup", Users: []string{"dave"}}},
		"other": {},
	}
	for pk, want := range wantRules {
		got, err := db.Rules(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i].ID, got[i].PublicKey = 0, ""
		}
		if !rulesEqual(got, want) {
			t.Errorf("rules of %s = %+v, want %+v", pk, got, want)
		}
	}
	if k, _ := db.Key(ctx, "bob"); k.PrivateKey != "bob-secret" {
		t.Errorf("bob's private key = %q, want the one given", k.PrivateKey)
	}

	list := tc.mustRun(keys("list")...)
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	wantRows := []string{
		"PUBLIC KEY SOURCE USERS GRANTS",
		"frontend config * group read-only",
		"alice database alice group read-write",
		"bob database * images.get,image.get",
		"carol database a,b group uploader",
		"dave database dave group dbgroup",
		"other database - (no rules)",
	}
	if !slices.Equal(rows, wantRows) {
		t.Errorf("keys list:\n%s\nwant rows %q", list, wantRows)
	}
	for _, secret := range []string{alicePriv, other, "bob-secret", "frontend-secret"} {
		if strings.Contains(list, secret) {
			t.Errorf("list shows a private key:\n%s", list)
		}
	}

	for _, tt := range []struct {
		name string
		args []string
		kind error
	}{
		{"duplicate", keys("add", "alice"), storage.ErrExist},
		{"invalid name", keys("add", "no/slash"), nil},
		{"unknown group", keys("add", "erin", "--group", "nope"), nil},
		{"group and resources", keys("add", "erin", "--group", "all", "--resources", "image.get"), nil},
		{"users without a rule", keys("add", "erin", "--users", "erin"), nil},
		{"star among users", keys("add", "erin", "--group", "all", "--users", "*,bob"), nil},
		{"configured key add", keys("add", "frontend"), nil},
		{"configured key delete", keys("delete", "frontend"), nil},
		{"configured key rotate", keys("rotate", "frontend"), nil},
		{"unknown delete", keys("delete", "nobody"), storage.ErrNotExist},
		{"unknown rotate", keys("rotate", "nobody"), storage.ErrNotExist},
		{"unknown subcommand", keys("frob"), nil},
		{"missing argument", keys("delete"), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tc.run(tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("error %v is not %v", err, tt.kind)
			}
		})
	}
	if _, err := db.Key(ctx, "erin"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("a refused add left key erin behind: %v", err)
	}

	newPriv := printedPrivate(t, tc.mustRun(keys("rotate", "alice")...))
	if k, _ := db.Key(ctx, "alice"); newPriv == alicePriv || k.PrivateKey != newPriv {
		t.Errorf("after rotate the stored key is %q, printed %q, old %q", k.PrivateKey, newPriv, alicePriv)
	}
	if rules, _ := db.Rules(ctx, "alice"); len(rules) != 1 {
		t.Errorf("rotate changed the rules: %+v", rules)
	}
	tc.mustRun(keys("rotate", "--private", "given", "alice")...)
	if k, _ := db.Key(ctx, "alice"); k.PrivateKey != "given" {
		t.Errorf("rotate --private stored %q", k.PrivateKey)
	}

	tc.mustRun(keys("delete", "carol")...)
	if _, err := db.Rules(ctx, "carol"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("carol after delete: %v", err)
	}
	if strings.Contains(tc.mustRun(keys("list")...), "carol") {
		t.Error("list shows a deleted key")
	}
}

func rulesEqual(a, b []storage.Rule) bool {
	return slices.EqualFunc(a, b, func(x, y storage.Rule) bool {
		return x.Group == y.Group && slices.Equal(x.Resources, y.Resources) && slices.Equal(x.Users, y.Users)
	})
}

// TestCLISignAgainstServer signs requests with `vitrine sign` and sends
// them to a real server on the same store: the server must accept them.
func TestCLISignAgainstServer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tc := newTestCLI(t)
	data := []string{"--data", dir}
	alicePriv := printedPrivate(t, tc.mustRun("keys", "add", "alice", "--group", "read-write", "--data", dir))
	viewerPriv := printedPrivate(t, tc.mustRun("keys", "add", "viewer", "--group", "read-only", "--users", "alice", "--data", dir))

	st, err := open(ctx, commonFlags{data: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.New(st.cfg.engine())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(st.cfg.api(), api.Deps{DB: st.db, Blobs: st.blobs, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	// An upload signed with headers printed as curl arguments.
	out := tc.mustRun("sign", "--public", "alice", "--private", alicePriv, "--method", "POST", hs.URL+"/users/alice/images")
	res := sendCurlArgs(t, "POST", out, testPNG(t, 40, 30))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("signed upload: %s %s", res.Status, res.body)
	}
	var up struct{ ImageIdentifier string }
	if err := json.Unmarshal(res.body, &up); err != nil || up.ImageIdentifier == "" {
		t.Fatalf("upload answer %s: %v", res.body, err)
	}
	img := hs.URL + "/users/alice/images/" + up.ImageIdentifier

	// Reads: a transformation query, the key named like the user or not,
	// the private key from a flag, the environment or the database.
	thumb := img + ".png?t[]=thumbnail:width=10,height=10"
	for _, tt := range []struct {
		name, wantStatus string
		args             []string
		env              map[string]string
	}{
		{"flag", "200", []string{"--private", alicePriv, thumb}, nil},
		{"environment", "200", []string{thumb}, map[string]string{"VITRINE_PUBLIC_KEY": "alice", "VITRINE_PRIVATE_KEY": alicePriv}},
		{"database", "200", append([]string{thumb}, data...), nil},
		{"other key", "200", []string{"--public", "viewer", "--private", viewerPriv, thumb}, nil},
		{"other key from database", "200", append([]string{"--public", "viewer", thumb}, data...), nil},
		{"wrong private key", "400", []string{"--private", viewerPriv, thumb}, nil},
	} {
		t.Run("get "+tt.name, func(t *testing.T) {
			tc := newTestCLI(t)
			for k, v := range tt.env {
				tc.env[k] = v
			}
			u := strings.TrimSpace(tc.mustRun(append([]string{"sign"}, tt.args...)...))
			if strings.Contains(tt.name, "other key") && !strings.Contains(u, "publicKey=viewer") {
				t.Errorf("signed URL %s lacks publicKey", u)
			}
			res := send(t, "GET", u, nil, nil)
			if got := res.Status[:3]; got != tt.wantStatus {
				t.Fatalf("GET %s: %s %s", u, res.Status, res.body)
			}
			if tt.wantStatus != "200" {
				return
			}
			m, err := png.Decode(bytes.NewReader(res.body))
			if err != nil {
				t.Fatal(err)
			}
			if b := m.Bounds(); b.Dx() > 10 || b.Dy() > 10 {
				t.Errorf("thumbnail is %dx%d, want within 10x10", b.Dx(), b.Dy())
			}
		})
	}

	// Metadata written with the headers printed one per line.
	meta := img + "/metadata"
	out = tc.mustRun("sign", "--method", "PUT", "--headers", "--private", alicePriv, meta)
	h := http.Header{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		h.Set(k, v)
	}
	if res := send(t, "PUT", meta, h, []byte(`{"title":"test"}`)); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT metadata with --headers: %s %s", res.Status, res.body)
	}

	// Rotation: the old private key stops working, the new one works.
	newPriv := printedPrivate(t, tc.mustRun("keys", "rotate", "alice", "--data", dir))
	out = tc.mustRun("sign", "--method", "DELETE", "--query", "--private", alicePriv, img)
	if res := send(t, "DELETE", strings.TrimSpace(out), nil, nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("DELETE with the rotated-out key: %s %s", res.Status, res.body)
	}
	out = tc.mustRun("sign", "--method", "DELETE", "--query", "--private", newPriv, img)
	if !strings.Contains(out, "signature=") || !strings.Contains(out, "timestamp=") {
		t.Errorf("--query output lacks signature and timestamp: %s", out)
	}
	if res := send(t, "DELETE", strings.TrimSpace(out), nil, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE with --query and the rotated key: %s %s", res.Status, res.body)
	}
}

type response struct {
	*http.Response
	body []byte
}

func send(t *testing.T, method, url string, h http.Header, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res, b}
}

// sendCurlArgs sends a request the way `curl $(vitrine sign ...)` would:
// the output split on white space into -H Name:value pairs and the URL.
func sendCurlArgs(t *testing.T, method, args string, body []byte) response {
	t.Helper()
	f := strings.Fields(args)
	if len(f) != 7 {
		t.Fatalf("want 3 -H arguments and a URL, got %q", args)
	}
	h := http.Header{}
	for i := 0; i < 6; i += 2 {
		k, v, ok := strings.Cut(f[i+1], ":")
		if f[i] != "-H" || !ok {
			t.Fatalf("bad curl arguments %q", args)
		}
		h.Set(k, v)
	}
	return send(t, method, f[6], h, body)
}

func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{uint8(x * 6), uint8(y * 8), 128, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCLISignedURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"http://h:8080/users/a/images", "http://h:8080/users/a/images"},
		{"http://h:80/users/a", "http://h/users/a"},
		{"https://h:443/users/a", "https://h/users/a"},
		{"http://h", "http://h/"},
		{"http://h/users/a/images/x.png?t[]=thumbnail:width=10,height=10", "http://h/users/a/images/x.png?t[]=thumbnail:width=10,height=10"},
		{"http://h/users/a/images/x?t%5B%5D=crop%3Awidth%3D5&q=a+b", "http://h/users/a/images/x?t[]=crop:width=5&q=a b"},
		{"http://h/users/a%20b/images?", "http://h/users/a b/images"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			tg, err := parseTarget(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := tg.signed(); got != tt.want {
				t.Errorf("signed() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCLIParseArgs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args     []string
		wantPos  []string
		wantFlag string
	}{
		{[]string{"alice", "--group", "g"}, []string{"alice"}, "g"},
		{[]string{"--group", "g", "alice"}, []string{"alice"}, "g"},
		{[]string{"alice", "bob", "--group=g"}, []string{"alice", "bob"}, "g"},
		{[]string{"--", "--group"}, []string{"--group"}, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flagSetWith("group")
			pos, err := parseArgs(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pos, tt.wantPos) || fs.Lookup("group").Value.String() != tt.wantFlag {
				t.Errorf("got %q and --group %q", pos, fs.Lookup("group").Value.String())
			}
		})
	}
}

func flagSetWith(names ...string) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, n := range names {
		fs.String(n, "", "")
	}
	return fs
}
