package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The npm tools that check api/openapi.yaml, at the versions the Makefile's
// test-deps installs under ~/.cache/vitrine-test-tools, one folder per
// version. A test finds each through its variable (a path), or else in that
// folder, and skips naming what to install when it finds neither.
const (
	redoclyVersion           = "2.77.0"
	openapiTypeScriptVersion = "7.13.0"
	typeScriptVersion        = "5.9.3"

	envRedocly           = "VITRINE_TEST_REDOCLY"
	envOpenAPITypeScript = "VITRINE_TEST_OPENAPI_TYPESCRIPT"
)

// TestOpenAPILint lints api/openapi.yaml with Redocly CLI's recommended
// rules: no error, and no warning but a probe's or the document's own
// operation without a 4xx response (they have none to give).
func TestOpenAPILint(t *testing.T) {
	t.Parallel()
	bin := npmTool(t, envRedocly, filepath.Join("redocly-"+redoclyVersion, "node_modules", ".bin", "redocly"),
		"@redocly/cli@"+redoclyVersion)
	out, stderr, err := runTool(t, t.TempDir(), bin, "lint", openAPIPath(t), "--format=json")
	var report struct {
		Totals struct {
			Errors, Warnings int
		}
		Problems []struct {
			RuleID, Severity, Message string
			Location                  []struct{ Pointer string }
		}
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("redocly lint (%v) printed no JSON report: %v\n%s\n%s", err, jerr, out, stderr)
	}
	allowed := map[string]bool{
		"#/paths/~1healthz/get/responses":      true,
		"#/paths/~1readyz/get/responses":       true,
		"#/paths/~1openapi.json/get/responses": true,
	}
	for _, p := range report.Problems {
		at := ""
		if len(p.Location) > 0 {
			at = p.Location[0].Pointer
		}
		if p.RuleID == "operation-4xx-response" && allowed[at] {
			continue
		}
		t.Errorf("api/openapi.yaml %s: %s %s: %s", at, p.Severity, p.RuleID, p.Message)
	}
	if report.Totals.Errors > 0 || err != nil {
		t.Errorf("redocly lint: %d errors (%v)", report.Totals.Errors, err)
	}
	t.Logf("redocly lint: %d errors, %d warnings", report.Totals.Errors, report.Totals.Warnings)
}

// TestOpenAPITypeScript generates TypeScript types from api/openapi.yaml with
// openapi-typescript and type-checks testdata/openapiclient.ts against them
// with tsc: a metadata write with arbitrary keys and nested JSON values
// compiles, and what is not JSON does not.
func TestOpenAPITypeScript(t *testing.T) {
	t.Parallel()
	gen := npmTool(t, envOpenAPITypeScript,
		filepath.Join("openapi-typescript-"+openapiTypeScriptVersion+"-typescript-"+typeScriptVersion,
			"node_modules", ".bin", "openapi-typescript"),
		"openapi-typescript@"+openapiTypeScriptVersion+" typescript@"+typeScriptVersion)
	dir := t.TempDir()
	if _, stderr, err := runTool(t, dir, gen, openAPIPath(t), "-o", "schema.ts"); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, stderr)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "openapiclient.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check.ts"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(filepath.Dir(gen), "tsc") // installed beside it
	out, stderr, err := runTool(t, dir, tsc, "--noEmit", "--strict", "--target", "es2022",
		"--module", "esnext", "--moduleResolution", "bundler", "check.ts")
	if err != nil {
		t.Fatalf("tsc on testdata/openapiclient.ts with the generated types: %v\n%s%s", err, out, stderr)
	}
}

// npmTool returns the tool named by the variable env, or else the one at
// rel under ~/.cache/vitrine-test-tools, or skips naming the packages.
func npmTool(t *testing.T, env, rel, packages string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("Node.js is not installed: this check runs %s (apt-get install npm, then make test-deps)", packages)
	}
	if p := os.Getenv(env); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "vitrine-test-tools", rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("%s is not installed: make test-deps installs it under ~/.cache/vitrine-test-tools (or npm install %s and set %s to the path of its %s)",
		packages, packages, env, filepath.Base(rel))
	return ""
}

// runTool runs bin in dir without telemetry or update checks and returns
// its standard output and error.
func runTool(t *testing.T, dir, bin string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	return runToolEnv(t, dir, nil, bin, args...)
}

// runToolEnv is runTool with the variables env added to the environment.
func runToolEnv(t *testing.T, dir string, env []string, bin string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// openAPIPath is the absolute path of api/openapi.yaml.
func openAPIPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
