package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The TypeScript client generators, at the versions the Makefile's
// test-deps installs under ~/.cache/vitrine-test-tools (found as npmTool
// finds the tools of openapitools_test.go). openapi-typescript, the fourth,
// is the one TestOpenAPITypeScript runs; openapi-fetch is the fetch wrapper
// its types are used with.
const (
	heyAPIVersion               = "0.95.0"
	swaggerTypeScriptAPIVersion = "13.13.0"
	orvalVersion                = "7.13.2"
	openapiFetchVersion         = "0.17.0"

	envHeyAPI               = "VITRINE_TEST_HEY_API"
	envSwaggerTypeScriptAPI = "VITRINE_TEST_SWAGGER_TYPESCRIPT_API"
	envOrval                = "VITRINE_TEST_ORVAL"
	envOpenAPIFetch         = "VITRINE_TEST_OPENAPI_FETCH"
)

// tsClient is one generator: how it makes a client of api/openapi.yaml in
// a folder holding testdata/tsclients, and the program there that drives it.
type tsClient struct {
	name     string
	program  string
	generate func(t *testing.T, dir, doc string)
}

var tsClients = []tsClient{
	{"@hey-api/openapi-ts", "heyapi.ts", func(t *testing.T, dir, doc string) {
		bin := npmTool(t, envHeyAPI, filepath.Join("hey-api-openapi-ts-"+heyAPIVersion+"-typescript-"+typeScriptVersion,
			"node_modules", ".bin", "openapi-ts"), "@hey-api/openapi-ts@"+heyAPIVersion+" typescript@"+typeScriptVersion)
		generateWith(t, dir, bin, "-i", doc, "-o", "client")
	}},
	{"swagger-typescript-api", "swagger.ts", func(t *testing.T, dir, doc string) {
		bin := npmTool(t, envSwaggerTypeScriptAPI, filepath.Join("swagger-typescript-api-"+swaggerTypeScriptAPIVersion,
			"node_modules", ".bin", "swagger-typescript-api"), "swagger-typescript-api@"+swaggerTypeScriptAPIVersion)
		generateWith(t, dir, bin, "generate", "-p", doc, "-o", "client", "-n", "api.ts")
	}},
	{"orval", "orval.ts", func(t *testing.T, dir, doc string) {
		bin := npmTool(t, envOrval, filepath.Join("orval-"+orvalVersion, "node_modules", ".bin", "orval"), "orval@"+orvalVersion)
		generateWith(t, dir, bin, "--config", "orval.config.cjs")
	}},
	{"openapi-typescript", "openapifetch.ts", func(t *testing.T, dir, doc string) {
		gen := openapiTypeScript(t)
		fetchPkg := npmTool(t, envOpenAPIFetch, filepath.Join("openapi-fetch-"+openapiFetchVersion, "node_modules", "openapi-fetch"),
			"openapi-fetch@"+openapiFetchVersion)
		if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(fetchPkg, filepath.Join(dir, "node_modules", "openapi-fetch")); err != nil {
			t.Fatal(err)
		}
		// The package openapi-typescript's binary belongs to: the program
		// generates through its Node API (openapifetch.gen.mjs).
		pkg := filepath.Join(filepath.Dir(gen), "..", "openapi-typescript")
		generateWith(t, dir, "node", "openapifetch.gen.mjs", pkg)
	}},
}

// TestTypeScriptClients generates a client of api/openapi.yaml with each
// TypeScript generator, with no change to what it generates, and runs a
// small program with each (testdata/tsclients, compiled by tsc --strict)
// against a server: a signed upload of an image's bytes, an upload by URL,
// a metadata round trip with free keys and nested values, a listing with
// metadata, a transformed image and a typed error. Every exchange goes
// through a proxy that checks it against the document.
func TestTypeScriptClients(t *testing.T) {
	tsc := filepath.Join(filepath.Dir(openapiTypeScript(t)), "tsc")
	var keys strings.Builder
	for _, c := range tsClients {
		u := tsUser(c)
		fmt.Fprintf(&keys, "    - {publicKey: %s, privateKey: %s-private, rules: [{users: [%s], group: read-write}]}\n", u, u, u)
	}
	s := startServer(t, "accessControl:\n  keys:\n"+keys.String()+"outbound:\n  allow: [\"127.0.0.1\"]\n")
	img, byURL := testPNG(t, 64, 48, 21), testPNG(t, 30, 20, 22)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/image.png":
			_, _ = w.Write(img)
		case "/byurl.png":
			_, _ = w.Write(byURL)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(origin.Close)
	proxy := newCheckingProxy(t, s.URL)
	doc := openAPIPath(t)
	for _, c := range tsClients {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join("testdata", "tsclients"), dir)
			c.generate(t, dir, doc)
			out, stderr, err := runTool(t, dir, tsc, "--strict", "--target", "es2022",
				"--module", "commonjs", "--moduleResolution", "node10", "--outDir", "out", c.program)
			if err != nil {
				t.Fatalf("tsc %s: %v\n%s%s", c.program, err, out, stderr)
			}
			u := tsUser(c)
			env := []string{"VITRINE_URL=" + proxy.URL, "VITRINE_USER=" + u, "VITRINE_PRIVATE_KEY=" + u + "-private",
				"VITRINE_ORIGIN=" + origin.URL, "VITRINE_IMAGE_MD5=" + md5Hex(img), "VITRINE_BYURL_MD5=" + md5Hex(byURL)}
			out, stderr, err = runToolEnv(t, dir, env, "node", filepath.Join("out", u+".js"))
			t.Logf("%s:\n%s%s", c.program, out, stderr)
			if err != nil {
				t.Fatalf("%s failed (%v)%s", c.program, err, proxy.problems())
			}
			for _, step := range []string{"upload", "upload by URL", "metadata", "listing", "transformed image", "typed error"} {
				if !strings.Contains(string(out), "ok "+step+"\n") {
					t.Errorf("%s did not pass the step %q", c.program, step)
				}
			}
			if p := proxy.problems(); p != "" {
				t.Errorf("exchanges api/openapi.yaml does not describe:%s", p)
			}
		})
	}
}

// tsUser is the user (and key) a generator's program works as.
func tsUser(c tsClient) string {
	return strings.TrimSuffix(c.program, ".ts")
}

// generateWith runs a generator in dir.
func generateWith(t *testing.T, dir, bin string, args ...string) {
	t.Helper()
	if out, stderr, err := runToolEnv(t, dir, []string{"VITRINE_OPENAPI=" + openAPIPath(t)}, bin, args...); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, out, stderr)
	}
}

// openapiTypeScript is the openapi-typescript binary TestOpenAPITypeScript
// runs.
func openapiTypeScript(t *testing.T) string {
	t.Helper()
	return npmTool(t, envOpenAPITypeScript,
		filepath.Join("openapi-typescript-"+openapiTypeScriptVersion+"-typescript-"+typeScriptVersion,
			"node_modules", ".bin", "openapi-typescript"),
		"openapi-typescript@"+openapiTypeScriptVersion+" typescript@"+typeScriptVersion)
}

// copyDir copies the files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// checkingProxy forwards to a server, checking every exchange against
// api/openapi.yaml (the tests' shared client's transport) and keeping what
// does not match; the Host header stays the proxy's, which signatures cover.
type checkingProxy struct {
	*httptest.Server
	mu   sync.Mutex
	errs []string
}

func newCheckingProxy(t *testing.T, target string) *checkingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &checkingProxy{}
	p.Server = httptest.NewServer(&httputil.ReverseProxy{
		Transport: checkedTransport(),
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = u.Scheme, u.Host, pr.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.mu.Lock()
			p.errs = append(p.errs, err.Error())
			p.mu.Unlock()
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	t.Cleanup(p.Close)
	return p
}

// problems returns the exchanges that did not match, one a line, and
// forgets them.
func (p *checkingProxy) problems() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := ""
	for _, e := range p.errs {
		s += "\n\t" + e
	}
	p.errs = nil
	return s
}
