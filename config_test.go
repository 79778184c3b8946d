package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/cdn"
	"go.yaml.in/yaml/v3"
)

// sample fills v with a non-zero value of its type, different for each
// seed, and returns how the environment writes it.
func sample(v reflect.Value, seed int) string {
	fill(v, seed)
	switch {
	case v.Type() == durationType:
		return v.Interface().(time.Duration).String()
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Bool:
		return fmt.Sprint(v.Elem().Bool())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		return strings.Join(v.Convert(reflect.TypeFor[[]string]()).Interface().([]string), ",")
	case v.Kind() == reflect.Map, v.Kind() == reflect.Slice, v.Kind() == reflect.Struct, v.Kind() == reflect.Pointer:
		// Through YAML, so the JSON uses the file's key names.
		b, err := yaml.Marshal(v.Interface())
		if err != nil {
			panic(err)
		}
		var tree any
		if err := yaml.Unmarshal(b, &tree); err != nil {
			panic(err)
		}
		j, err := json.Marshal(tree)
		if err != nil {
			panic(err)
		}
		return string(j)
	default:
		return fmt.Sprint(v.Interface())
	}
}

// fill sets every exported field reachable from v to a non-zero value.
func fill(v reflect.Value, seed int) {
	switch {
	case v.Type() == durationType:
		v.SetInt(int64(time.Duration(seed+1) * time.Second))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", seed))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed + 1))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed)
		if v.Elem().Kind() == reflect.Bool {
			v.Elem().SetBool(seed%2 == 0) // false too: a set false is not the default
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), seed)
		fill(v.Index(1), seed+1)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, seed)
		fill(e, seed)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); (f.IsExported() || f.Anonymous) && f.Tag.Get("yaml") != "-" {
				fill(v.Field(i), seed)
			}
		}
	}
}

// TestEnvSetsEveryKey walks every key of the configuration and sets it
// through its environment variable alone: scalars, durations, lists,
// maps and lists of objects.
func TestEnvSetsEveryKey(t *testing.T) {
	keys := configKeys(&fileConfig{})
	if len(keys) < 60 {
		t.Fatalf("only %d keys: the walk misses sections", len(keys))
	}
	for i, k := range keys {
		t.Run(k.Path(), func(t *testing.T) {
			want := reflect.New(k.value.Type()).Elem()
			raw := sample(want, i)
			var cfg fileConfig
			err := applyEnv(&cfg, func(name string) (string, bool) { return raw, name == k.Env() })
			if err != nil {
				t.Fatalf("%s=%s: %v", k.Env(), raw, err)
			}
			got := configKeys(&cfg)[i].value
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("%s=%s set %#v, want %#v", k.Env(), raw, got.Interface(), want.Interface())
			}
			if !reflect.DeepEqual(cfg, withKey(i, want)) {
				t.Errorf("%s=%s changed other keys too", k.Env(), raw)
			}
		})
	}
}

// withKey returns an empty configuration with only key i set to v.
func withKey(i int, v reflect.Value) fileConfig {
	var cfg fileConfig
	configKeys(&cfg)[i].value.Set(v)
	return cfg
}

// TestEnvNames checks a few variable names the README shows, and the
// values the environment parses in ways a file does not.
func TestEnvNames(t *testing.T) {
	env := map[string]string{
		"VITRINE_LIMITS_MAX_BODY_BYTES":        "1000",
		"VITRINE_LIMITS_MAX_WIDTH":             "200",
		"VITRINE_STATS_ALLOW":                  "127.0.0.1, 10.0.0.0/8,",
		"VITRINE_TRUSTED_PROXIES":              `["10.0.0.1"]`,
		"VITRINE_TRANSFORMATION_PRESETS":       `{"small": ["thumbnail:width=100,height=100"]}`,
		"VITRINE_ACCESS_CONTROL_KEYS":          `[{"publicKey": "a", "privateKey": "b", "rules": [{"users": "*", "group": "all"}]}]`,
		"VITRINE_FILTERS_COMPILE_TIMEOUT":      "90s",
		"VITRINE_CONTENT_NEGOTIATE_IMAGES":     "false",
		"VITRINE_BLOB_QUEUE_RESERVATION_LEASE": "10m",
		"VITRINE_UPLOADS_TOKEN_MAX_TTL":        "2h",
		"VITRINE_UPLOADS_FORMATS":              "png,avif",
		"VITRINE_PIXEL_POOL_MAX_IDLE_MB":       "64",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := loadConfig("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"api limits", cfg.API.Limits.MaxBodyBytes, int64(1000)},
		{"engine limits", cfg.Engine.MaxWidth, 200},
		{"comma list", cfg.API.StatsAllow, []string{"127.0.0.1", "10.0.0.0/8"}},
		{"JSON list", cfg.API.TrustedProxies, []string{"10.0.0.1"}},
		{"map of lists", cfg.Engine.Presets["small"], []string{"thumbnail:width=100,height=100"}},
		{"list of objects", cfg.API.AccessControl.Keys[0].Rules[0].Users, []string{"*"}},
		{"duration", cfg.Filters.CompileTimeout, 90 * time.Second},
		{"optional bool", *cfg.API.ContentNegotiateImages, false},
		{"lease", cfg.BlobQueue.ReservationLease, 10 * time.Minute},
		{"acronym", cfg.API.Uploads.TokenMaxTTL, 2 * time.Hour},
		{"uploads shared", cfg.Engine.Uploads.Formats, []string{"png", "avif"}},
		{"acronym at the end", cfg.Engine.PixelPool.MaxIdleMB, 64},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(fmt.Sprint(c.got), fmt.Sprint(c.want)) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestEnvRefusesBadValues checks that a value the key cannot hold is an
// error naming the variable.
func TestEnvRefusesBadValues(t *testing.T) {
	for name, raw := range map[string]string{
		"VITRINE_LIMITS_MAX_WIDTH":        "wide",
		"VITRINE_SHUTDOWN_TIMEOUT":        "30",
		"VITRINE_ACCESS_LOG":              "maybe",
		"VITRINE_ACCESS_CONTROL_KEYS":     `[{"publicKey": "a", "nope": 1}]`,
		"VITRINE_ICC_PROFILES":            `{"srgb": `,
		"VITRINE_TRANSFORMATION_PRESETS":  `["not", "a", "map"]`,
		"VITRINE_ACCESS_CONTROL_DATABASE": "yes please",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, raw)
			if _, err := loadConfig("", t.TempDir()); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: %v, want an error naming the variable", name, raw, err)
			}
		})
	}
}

// TestLoadConfigFile checks an empty file, the shared limits section and
// an unknown key.
func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := loadConfig(write("empty.yaml", ""), dir); err != nil {
		t.Errorf("empty file: %v", err)
	}
	cfg, err := loadConfig(write("limits.yaml", "limits:\n  maxBodyBytes: 10\n  maxWidth: 20\n"+
		"uploads:\n  formats: [png]\noutput:\n  keepMetadata: true\ntransformationPresets:\n  p: [strip]\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.Limits.MaxBodyBytes != 10 || cfg.Engine.MaxWidth != 20 || !slices.Equal(cfg.Engine.Uploads.Formats, []string{"png"}) ||
		!cfg.Engine.Output.KeepMetadata || len(cfg.Engine.Presets["p"]) != 1 {
		t.Errorf("not composed: api %+v, engine %+v", cfg.API.Limits, cfg.Engine)
	}
	if _, err := loadConfig(write("unknown.yaml", "limits:\n  maxDepth: 3\n"), dir); err == nil ||
		!strings.Contains(err.Error(), "maxDepth") {
		t.Errorf("unknown key: %v", err)
	}
	// Every command refuses these when it loads the file, not only serve.
	for _, bad := range []struct{ yaml, want string }{
		{"variations:\n  scales: [3]\n", "scale 3"},
		{"requestTimeout: -1s\n", "requestTimeout"},
		{"outbound:\n  allow: [http://hooks.internal]\n", "outbound.allow"},
		{"uploads:\n  tokenMaxTTL: 10ms\n", "uploads.tokenMaxTTL"},
		{"uploads:\n  urlTimeout: -1s\n", "uploads.urlTimeout"},
		{"uploads:\n  urlConnectTimeout: -1s\n", "uploads.urlConnectTimeout"},
	} {
		if _, err := loadConfig(write("bad.yaml", bad.yaml), dir); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error naming %q", bad.yaml, err, bad.want)
		}
	}
}

// TestConfigDefaults: with no file, or a file that leaves them out, access
// control is stored in the database and changes through the API, and
// filters load from <data>/filters; explicit settings win.
func TestConfigDefaults(t *testing.T) {
	dir := t.TempDir()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, yaml string
		database   bool
		filtersDir string
	}{
		{"no file", "", true, filepath.Join(abs, "filters")},
		{"keys only", "accessControl:\n  keys: [{publicKey: a, privateKey: b}]\n", true, filepath.Join(abs, "filters")},
		{"database off", "accessControl:\n  database: false\n", false, filepath.Join(abs, "filters")},
		{"filters dir set", "filters:\n  dir: /srv/filters\n", true, "/srv/filters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = filepath.Join(t.TempDir(), "vitrine.yaml")
				if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := loadConfig(path, dir)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.API.AccessControl.Database != tt.database {
				t.Errorf("accessControl.database = %v, want %v", cfg.API.AccessControl.Database, tt.database)
			}
			if cfg.Filters.Dir != tt.filtersDir {
				t.Errorf("filters.dir = %q, want %q", cfg.Filters.Dir, tt.filtersDir)
			}
		})
	}
}

// configDocs are the documents holding the configuration tables: README's
// Configuration, and the WebAssembly filters' keys in filters/README.md.
var configDocs = []string{"README.md", "filters/README.md"}

// TestREADMEConfigTable checks the configuration tables of configDocs against
// the structs: every key is documented, and every documented key exists.
func TestREADMEConfigTable(t *testing.T) {
	var b []byte
	for _, doc := range configDocs {
		d, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, d...), '\n')
	}
	row := regexp.MustCompile("^\\| (`[a-zA-Z.]+`.*?) \\|")
	name := regexp.MustCompile("`([a-zA-Z]+(?:\\.[a-zA-Z]+)*)`")
	documented := map[string]bool{}
	// Only the configuration tables count: those whose header is
	// "| key | default | meaning |" (others list parameters, routes, ...).
	inTable := false
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if strings.HasPrefix(line, "| key |") {
			inTable = true
		}
		if m := row.FindStringSubmatch(line); inTable && m != nil {
			for _, n := range name.FindAllStringSubmatch(m[1], -1) {
				documented[n[1]] = true
			}
		}
	}
	keys := map[string]bool{}
	for _, k := range configKeys(&fileConfig{}) {
		keys[k.Path()] = true
		if !documented[k.Path()] {
			t.Errorf("the configuration tables of %v do not document %s", configDocs, k.Path())
		}
	}
	for n := range documented {
		if !keys[n] {
			t.Errorf("%v document %s, which is not a configuration key", configDocs, n)
		}
	}
}

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
