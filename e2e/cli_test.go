package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// The command line: `vitrine keys` on a data directory (checked through the
// database it writes), and `vitrine sign` whose output a server on the same
// data directory must accept.

// runCLI runs `vitrine <args>` with the test's environment (without
// VITRINE_* variables) plus env, and returns its standard output and error;
// err is set when it exits with a non-zero status.
func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running vitrine %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), err
}

// mustCLI is runCLI that fails the test on a non-zero exit.
func mustCLI(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out, errOut, err := runCLI(t, env, args...)
	if err != nil {
		t.Fatalf("vitrine %s: %v\n%s", strings.Join(args, " "), err, errOut)
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

// openDataDB opens the database of a data directory the way vitrine does
// on the embedded default: DIR/vitrine.db, private keys sealed under the
// secret in DIR/secret.
func openDataDB(t *testing.T, dir string) *storage.DB {
	t.Helper()
	secret, err := os.ReadFile(filepath.Join(dir, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(context.Background(), "sqlite://"+filepath.Join(dir, "vitrine.db"),
		storage.Options{Secret: bytes.TrimSpace(secret)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
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
	keys := func(args ...string) []string { return append(append([]string{"keys"}, args...), data...) }

	// Flags after the positional argument, and a generated private key.
	alicePriv := printedPrivate(t, mustCLI(t, nil, keys("add", "alice", "--group", "read-write")...))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(alicePriv) {
		t.Errorf("generated private key %q is not 32 bytes of hex", alicePriv)
	}
	db := openDataDB(t, dir)
	if k, err := db.Key(ctx, "alice"); err != nil || k.PrivateKey != alicePriv {
		t.Errorf("stored key = %+v, %v; want the printed private key", k, err)
	}
	raw, err := db.RawPrivateKey(ctx, "alice")
	if err != nil || strings.Contains(raw, alicePriv) {
		t.Errorf("private key stored in clear: %q (%v)", raw, err)
	}
	if _, err := db.PutGroup(ctx, storage.Group{Name: "dbgroup", Resources: []string{"image.get"}}); err != nil {
		t.Fatal(err)
	}
	other := printedPrivate(t, mustCLI(t, nil, keys("add", "other")...))
	if other == alicePriv {
		t.Error("two generated private keys are equal")
	}
	mustCLI(t, nil, keys("add", "bob", "--private", "bob-secret", "--resources", "images.get,image.get", "--users", "*")...)
	// Flags before the positional argument.
	mustCLI(t, nil, keys("add", "--group", "uploader", "--users", "a,b", "carol")...)
	mustCLI(t, nil, keys("add", "dave", "--group", "dbgroup")...)
	// A flag written --name=value.
	mustCLI(t, nil, keys("add", "--group=read-only", "--users=alice", "fred")...)

	wantRules := map[string][]storage.Rule{
		"alice": {{Group: "read-write", Users: []string{"alice"}}},
		"bob":   {{Resources: []string{"images.get", "image.get"}, Users: []string{"*"}}},
		"carol": {{Group: "uploader", Users: []string{"a", "b"}}},
		"dave":  {{Group: "dbgroup", Users: []string{"dave"}}},
		"fred":  {{Group: "read-only", Users: []string{"alice"}}},
		"other": {},
	}
	for pk, want := range wantRules {
		got, err := db.Rules(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		if !rulesEqual(got, want) {
			t.Errorf("rules of %s = %+v, want %+v", pk, got, want)
		}
	}
	if k, _ := db.Key(ctx, "bob"); k.PrivateKey != "bob-secret" {
		t.Errorf("bob's private key = %q, want the one given", k.PrivateKey)
	}
	mustCLI(t, nil, keys("delete", "fred")...)

	list := mustCLI(t, nil, keys("list")...)
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

	// Refusals: a non-zero exit and the reason on standard error (and, for
	// the storage errors, their text).
	for _, tt := range []struct {
		name string
		args []string
		kind error
		msg  string
	}{
		{"duplicate", keys("add", "alice"), storage.ErrExist, "vitrine keys rotate alice"},
		{"invalid name", keys("add", "no/slash"), nil, `invalid public key "no/slash"`},
		{"unknown group", keys("add", "erin", "--group", "nope"), nil, `Group 'nope' does not exist`},
		{"unknown resource", keys("add", "erin", "--resources", "image.get,image.gett"), nil, `Resource 'image.gett' does not exist`},
		{"invalid user", keys("add", "erin", "--group", "all", "--users", "no/slash"), nil, "Illegal value for users property"},
		{"group and resources", keys("add", "erin", "--group", "all", "--resources", "image.get"), nil, "give --group or --resources, not both"},
		{"users without a rule", keys("add", "erin", "--users", "erin"), nil, "--users needs --group or --resources"},
		{"star among users", keys("add", "erin", "--group", "all", "--users", "*,bob"), nil, "--users is '*' alone"},
		{"configured key add", keys("add", "frontend"), nil, "key frontend is defined in the configuration file"},
		{"configured key delete", keys("delete", "frontend"), nil, "key frontend is defined in the configuration file"},
		{"configured key rotate", keys("rotate", "frontend"), nil, "key frontend is defined in the configuration file"},
		{"unknown delete", keys("delete", "nobody"), storage.ErrNotExist, ""},
		{"unknown rotate", keys("rotate", "nobody"), storage.ErrNotExist, ""},
		{"unknown subcommand", keys("frob"), nil, `keys: unknown subcommand "frob"`},
		{"missing argument", keys("delete"), nil, "keys delete: want 1 argument(s), got 0"},
		{"two arguments", keys("add", "erin", "bob", "--group=all"), nil, "keys add: want 1 argument(s), got 2"},
		// Everything after -- is positional, flag-like or not.
		{"after --", append(append([]string{"keys", "add"}, data...), "--", "--group=all"), nil, `keys add: invalid public key "--group=all"`},
		{"flag after -- and a name", append(append([]string{"keys", "add"}, data...), "--", "erin", "--group=all"), nil, "keys add: want 1 argument(s), got 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, err := runCLI(t, nil, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.kind != nil && !strings.Contains(errOut, tt.kind.Error()) {
				t.Errorf("error %q is not %v", errOut, tt.kind)
			}
			if !strings.Contains(errOut, tt.msg) {
				t.Errorf("error %q does not say %q", errOut, tt.msg)
			}
		})
	}
	if _, err := db.Key(ctx, "erin"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("a refused add left key erin behind: %v", err)
	}

	newPriv := printedPrivate(t, mustCLI(t, nil, keys("rotate", "alice")...))
	if k, _ := db.Key(ctx, "alice"); newPriv == alicePriv || k.PrivateKey != newPriv {
		t.Errorf("after rotate the stored key is %q, printed %q, old %q", k.PrivateKey, newPriv, alicePriv)
	}
	if rules, _ := db.Rules(ctx, "alice"); len(rules) != 1 {
		t.Errorf("rotate changed the rules: %+v", rules)
	}
	mustCLI(t, nil, keys("rotate", "--private", "given", "alice")...)
	if k, _ := db.Key(ctx, "alice"); k.PrivateKey != "given" {
		t.Errorf("rotate --private stored %q", k.PrivateKey)
	}

	mustCLI(t, nil, keys("delete", "carol")...)
	if _, err := db.Rules(ctx, "carol"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("carol after delete: %v", err)
	}
	if strings.Contains(mustCLI(t, nil, keys("list")...), "carol") {
		t.Error("list shows a deleted key")
	}
}

// rulesEqual compares rules by what they grant (not their ID or key).
func rulesEqual(a, b []storage.Rule) bool {
	return slices.EqualFunc(a, b, func(x, y storage.Rule) bool {
		return x.Group == y.Group && slices.Equal(x.Resources, y.Resources) && slices.Equal(x.Users, y.Users)
	})
}

// TestCLISignAgainstServer signs requests with `vitrine sign` and sends
// them to a server on the same data directory: it must accept them.
func TestCLISignAgainstServer(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data", dir}
	alicePriv := printedPrivate(t, mustCLI(t, nil, "keys", "add", "alice", "--group", "read-write", "--data", dir))
	viewerPriv := printedPrivate(t, mustCLI(t, nil, "keys", "add", "viewer", "--group", "read-only", "--users", "alice", "--data", dir))
	s := startServerData(t, "", dir)
	sign := func(t *testing.T, env map[string]string, args ...string) string {
		t.Helper()
		return mustCLI(t, env, append([]string{"sign"}, args...)...)
	}

	// An upload signed with headers printed as curl arguments.
	out := sign(t, nil, "--public", "alice", "--private", alicePriv, "--method", "POST", s.URL+"/users/alice/images")
	res := sendCurlArgs(t, s, "POST", out, testPNG(t, 40, 30, 0))
	if res.Status != http.StatusCreated {
		t.Fatalf("signed upload: %s", res)
	}
	var up struct{ ImageIdentifier string }
	if err := json.Unmarshal(res.Body, &up); err != nil || up.ImageIdentifier == "" {
		t.Fatalf("upload answer %s: %v", res.Body, err)
	}
	img := s.URL + "/users/alice/images/" + up.ImageIdentifier

	// Reads: a transformation query, the key named like the user or not,
	// the private key from a flag, the environment or the database.
	thumb := img + ".png?t[]=thumbnail:width=10,height=10"
	for _, tt := range []struct {
		name       string
		wantStatus int
		args       []string
		env        map[string]string
	}{
		{"flag", 200, []string{"--private", alicePriv, thumb}, nil},
		{"environment", 200, []string{thumb}, map[string]string{"VITRINE_PUBLIC_KEY": "alice", "VITRINE_PRIVATE_KEY": alicePriv}},
		{"database", 200, append([]string{thumb}, data...), nil},
		{"other key", 200, []string{"--public", "viewer", "--private", viewerPriv, thumb}, nil},
		{"other key from database", 200, append([]string{"--public", "viewer", thumb}, data...), nil},
		{"wrong private key", 400, []string{"--private", viewerPriv, thumb}, nil},
	} {
		t.Run("get "+tt.name, func(t *testing.T) {
			u := strings.TrimSpace(sign(t, tt.env, tt.args...))
			if strings.Contains(tt.name, "other key") && !strings.Contains(u, "publicKey=viewer") {
				t.Errorf("signed URL %s lacks publicKey", u)
			}
			res := s.do(t, "GET", u, nil, nil)
			if res.Status != tt.wantStatus {
				t.Fatalf("GET %s: %s", u, res)
			}
			if tt.wantStatus != 200 {
				return
			}
			m, err := png.Decode(bytes.NewReader(res.Body))
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
	out = sign(t, nil, "--method", "PUT", "--headers", "--private", alicePriv, meta)
	h := http.Header{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		h.Set(k, v)
	}
	res = s.do(t, "PUT", meta, []byte(`{"title":"test"}`), func(r *http.Request) { r.Header = h })
	if res.Status != http.StatusOK {
		t.Fatalf("PUT metadata with --headers: %s", res)
	}

	// A resumable upload: created with a signed POST, its HEAD signed as
	// the upload expects (a write's headers, not an accessToken).
	out = sign(t, nil, "--method", "POST", "--headers", "--private", alicePriv, s.URL+"/users/alice/uploads")
	h = http.Header{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		h.Set(k, v)
	}
	h.Set("Tus-Resumable", "1.0.0")
	h.Set("Upload-Length", "100")
	res = s.do(t, "POST", s.URL+"/users/alice/uploads", nil, func(r *http.Request) { r.Header = h })
	upload := res.Header.Get("Location")
	if res.Status != http.StatusCreated || upload == "" {
		t.Fatalf("create a resumable upload: %s", res)
	}
	if !strings.HasPrefix(upload, "http") {
		upload = s.URL + upload
	}
	out = sign(t, nil, "--method", "HEAD", "--headers", "--private", alicePriv, upload)
	if strings.Contains(out, "accessToken") {
		t.Fatalf("a resumable upload's HEAD signed as a read: %s", out)
	}
	h = http.Header{"Tus-Resumable": {"1.0.0"}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		h.Set(k, v)
	}
	if res := s.do(t, "HEAD", upload, nil, func(r *http.Request) { r.Header = h }); res.Status != http.StatusOK ||
		res.Header.Get("Upload-Offset") != "0" {
		t.Fatalf("HEAD signed by vitrine sign: %s", res)
	}

	// Rotation: the old private key stops working, the new one works.
	newPriv := printedPrivate(t, mustCLI(t, nil, "keys", "rotate", "alice", "--data", dir))
	out = sign(t, nil, "--method", "DELETE", "--query", "--private", alicePriv, img)
	if res := s.do(t, "DELETE", strings.TrimSpace(out), nil, nil); res.Status != http.StatusBadRequest {
		t.Fatalf("DELETE with the rotated-out key: %s", res)
	}
	out = sign(t, nil, "--method", "DELETE", "--query", "--private", newPriv, img)
	if !strings.Contains(out, "signature=") || !strings.Contains(out, "timestamp=") {
		t.Errorf("--query output lacks signature and timestamp: %s", out)
	}
	if res := s.do(t, "DELETE", strings.TrimSpace(out), nil, nil); res.Status != http.StatusOK {
		t.Fatalf("DELETE with --query and the rotated key: %s", res)
	}
}

// sendCurlArgs sends a request the way `curl $(vitrine sign ...)` would:
// the output split on white space into -H Name:value pairs and the URL.
func sendCurlArgs(t *testing.T, s *server, method, args string, body []byte) *response {
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
	return s.do(t, method, f[6], body, func(r *http.Request) { r.Header = h })
}

// TestCLIFsck: `vitrine fsck` on the embedded default's data directory
// reports an image whose blob was lost and a blob no record names (old
// enough to be past the grace period), leaves a young one alone, repairs
// what it may, and says so in its JSON report.
func TestCLIFsck(t *testing.T) {
	user := uniqueName("fsck")
	k := key{Public: user, Private: "private-" + user}
	s := startServer(t, readWriteKey(k, user))
	var ids []string
	for i := range 3 {
		r := s.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 20, 10+i, byte(i)), k)
		wantStatus(t, "upload", r, http.StatusCreated)
		ids = append(ids, md5Hex(testPNG(t, 20, 10+i, byte(i))))
	}
	wantStatus(t, "variant", s.get(t, "/users/"+user+"/images/"+ids[0]+".png?t[]=thumbnail:width=5", k), http.StatusOK)
	s.Stop()
	if out, _, err := runCLI(t, nil, "fsck", "--data", s.DataDir); err != nil {
		t.Fatalf("fsck of a consistent store: %v\n%s", err, out)
	}

	dir := filepath.Join(s.DataDir, "images", "images", user)
	lost, err := filepath.Glob(filepath.Join(dir, ids[1]+".*"))
	if err != nil || len(lost) != 1 {
		t.Fatalf("blob of %s: %v %v", ids[1], lost, err)
	}
	if err := os.Remove(lost[0]); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "0123456789abcdef0123456789abcdef.feedface")
	young := filepath.Join(dir, "fedcba9876543210fedcba9876543210.cafebabe")
	for _, f := range []string{orphan, young} {
		if err := os.WriteFile(f, []byte("not an image of any record"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}

	out, _, err := runCLI(t, nil, "fsck", "--data", s.DataDir)
	if err == nil {
		t.Fatalf("fsck exited 0 with a lost blob and an orphan:\n%s", out)
	}
	for _, want := range []string{"image records whose blob is missing: 1", "image blobs no record names: 1 (--repair deletes them)"} {
		if !strings.Contains(out, want) {
			t.Errorf("fsck report lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		ImagesWithoutBlob, OrphanImageBlobs struct {
			Count, Repaired int
			Examples        []string
		}
	}
	out, _, err = runCLI(t, nil, "fsck", "--data", s.DataDir, "--repair", "--json")
	if err == nil || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("fsck --repair --json: %v (exit 1 expected: the lost blob cannot be repaired)\n%s", err, out)
	}
	if rep.OrphanImageBlobs.Repaired != 1 || rep.ImagesWithoutBlob.Count != 1 || rep.ImagesWithoutBlob.Repaired != 0 ||
		len(rep.ImagesWithoutBlob.Examples) != 1 || !strings.Contains(rep.ImagesWithoutBlob.Examples[0], ids[1]) {
		t.Fatalf("fsck --repair --json report:\n%s", out)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphan survived --repair: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a blob younger than the grace period was touched: %v", err)
	}
	if _, _, err := runCLI(t, nil, "fsck", "--data", s.DataDir, "stray"); err == nil {
		t.Error("fsck accepted a stray argument")
	}
}

// TestCLIStrictCommandLine runs the binary with command lines it must
// refuse (exit status 2, nothing changed) and `vitrine version`.
func TestCLIStrictCommandLine(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{
		{"migrate", "--data", data, "x", "--dry-run"},
		{"migrate", "--data", data, "--dry-run=maybe"},
		{"serve", "--data", data, "--listen", "127.0.0.1:0", "stray"},
		{"keys", "list", "--data", data, "--private", "k"},
	} {
		_, errOut, err := runCLI(t, nil, args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(errOut, "usage:") {
			t.Errorf("vitrine %s: %v, want exit status 2 and the usage\n%s", strings.Join(args, " "), err, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "vitrine.db")); err == nil {
		t.Error("a refused command line created the database")
	}
	if out, _, err := runCLI(t, nil, "migrate", "--help"); err != nil || !strings.Contains(out, "--dry-run") {
		t.Errorf("migrate --help: %v\n%s", err, out)
	}
	out := mustCLI(t, nil, "version")
	for _, want := range []string{"vitrine ", "commit ", "go      go1.", "libvips 8."} {
		if !strings.Contains(out, want) {
			t.Errorf("vitrine version does not print %q:\n%s", want, out)
		}
	}
}
