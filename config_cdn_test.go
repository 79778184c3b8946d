package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/cdn"
)

// TestCDNConfig reads a `cdn` section: the tags go to api, the purgers are
// checked (tokens read from tokenEnv) and each builds.
func TestCDNConfig(t *testing.T) {
	t.Setenv("VITRINE_TEST_FASTLY_TOKEN", "fastly-secret")
	dir := t.TempDir()
	path := filepath.Join(dir, "vitrine.yaml")
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`cdn:
  tagPrefix: shop-
  tagHeaders: {Surrogate-Key: space}
  purgers:
    - type: varnish
      urls: ["http://10.0.0.5:6081/", "http://10.0.0.6:6081/"]
      timeout: 3s
    - type: fastly
      serviceID: SU1Z0isxPaozGVKXdv0eY
      tokenEnv: VITRINE_TEST_FASTLY_TOKEN
    - type: cloudflare
      zoneID: 023e105f4ecef8ad9ca31a8372d0c353
      token: cf-token
      batch: 30
    - type: http
      url: https://purge.internal/tags
      headers: {X-Source: vitrine}
`)
	cfg, err := loadConfig(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.CDN.Prefix != "shop-" || len(cfg.API.CDN.Headers) != 1 {
		t.Errorf("api's tags not composed: %+v", cfg.API.CDN)
	}
	p := cfg.CDN.Purgers
	if len(p) != 4 || p[0].Timeout != 3*time.Second || len(p[0].URLs) != 2 || p[1].Token != "fastly-secret" ||
		p[2].Batch != 30 || p[3].Headers["X-Source"] != "vitrine" {
		t.Fatalf("purgers %+v", p)
	}
	for _, pc := range p {
		if _, err := cdn.NewPurger(pc); err != nil {
			t.Errorf("%s: %v", pc.Type, err)
		}
	}

	for _, bad := range []struct{ yaml, want string }{
		{"cdn:\n  tagPrefix: a b\n", "cdn.tagPrefix"},
		{"cdn:\n  tagHeaders: {xkey: tab}\n", "cdn.tagHeaders"},
		{"cdn:\n  purgers: [{type: akamai}]\n", "cdn.purgers[0]"},
		{"cdn:\n  purgers: [{type: fastly, serviceID: s}]\n", "needs token"},
		{"cdn:\n  purgers: [{type: fastly, serviceID: s, tokenEnv: VITRINE_TEST_UNSET_TOKEN}]\n", "VITRINE_TEST_UNSET_TOKEN is not set"},
		{"cdn:\n  purgers: [{type: varnish}]\n", "needs url"},
	} {
		write(bad.yaml)
		if _, err := loadConfig(path, dir); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error naming %q", bad.yaml, err, bad.want)
		}
	}
}
