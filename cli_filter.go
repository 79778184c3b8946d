package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
)

const filterUsage = `usage:
  vitrine filter push DIR [--url URL] ...    (vitrine filter push --help)
  vitrine filter rollback NAME [VERSION] ... (vitrine filter rollback --help)
  vitrine filter check <dir> [--allow clock,random] [--max-module-bytes N] [--compile-timeout D]
  vitrine filter test <dir> --image IN --out OUT [--param k=v ...] [--allow clock,random]
check loads the filter as the server would (manifest, ABI marker, exports, imports, start), within
the same limits, and says why it would be refused. test runs one transformation filter on IN through the same host and
engine code as the server and writes OUT (its extension picks the format). push and rollback
deploy a filter to every instance through a server's API.
`

// paramFlags collects repeated --param k=v.
type paramFlags []string

func (p *paramFlags) String() string { return strings.Join(*p, ",") }
func (p *paramFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("want k=v, got %q", v)
	}
	*p = append(*p, v)
	return nil
}

// filterLocal is the command line of `vitrine filter check` and `vitrine
// filter test`, and its flags' values.
type filterLocal struct {
	*command
	allow          string
	maxModule      int64
	compileTimeout time.Duration
	in, out        string
	params         paramFlags
}

// newFilterLocal returns the command line of `vitrine filter <sub>`, check
// or test.
func newFilterLocal(sub string) *filterLocal {
	l := &filterLocal{command: newCommand("filter "+sub, filterUsage)}
	l.StringVar(&l.allow, "allow", "", "capabilities to grant, as filters.allow does: clock,random")
	l.Int64Var(&l.maxModule, "max-module-bytes", filters.DefaultMaxModuleBytes, "refuse a larger filter.wasm, as filters.maxModuleBytes does")
	l.DurationVar(&l.compileTimeout, "compile-timeout", filters.DefaultCompileTimeout, "bound on compiling and starting, as filters.compileTimeout")
	l.StringVar(&l.in, "image", "", "test: input image")
	l.StringVar(&l.out, "out", "", "test: output image (png, jpg, webp, gif, avif)")
	l.Var(&l.params, "param", "test: a parameter k=v (repeat)")
	return l
}

// filterCommand is `vitrine filter`: the test kit for filter authors.
func filterCommand(ctx context.Context, args []string) error {
	top := newCommand("filter", filterUsage)
	sub, rest := subcommand(args, newFilterLocal("check").command, newFilterRemote("push").command)
	switch sub {
	case "", "help":
		return top.noSubcommand(args, []string{"check", "test", "push", "rollback"})
	case "push", "rollback":
		return filterRemote(ctx, sub, rest)
	case "check", "test":
	default:
		return top.errorf("filter: unknown subcommand %q", sub)
	}
	cmd := newFilterLocal(sub)
	pos, err := cmd.parse(rest, 1, 1)
	if err != nil {
		return err
	}
	if sub == "test" && (cmd.in == "" || cmd.out == "") {
		return cmd.errorf("filter test: --image and --out are required")
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return err
	}
	defer engine.Shutdown()
	ec := eng.Config()
	cfg := filters.Config{Allow: splitList(cmd.allow), Reserved: eng.Registry().Names(),
		MaxWidth: ec.MaxWidth, MaxHeight: ec.MaxHeight, MaxPixels: ec.MaxPixels,
		MaxModuleBytes: cmd.maxModule, CompileTimeout: cmd.compileTimeout,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if sub == "test" {
		return testFilter(ctx, eng, cfg, pos[0], cmd.in, cmd.out, cmd.params)
	}
	m, err := filters.Check(ctx, cfg, pos[0])
	if err != nil {
		return err
	}
	fmt.Printf("ok: %s %s (%s, ABI %d)\n", m.Name, m.Version, m.Kind, m.ABI)
	return nil
}

// testFilter runs one transformation filter on an image file.
func testFilter(ctx context.Context, eng *engine.Engine, cfg filters.Config, dir, in, out string, params []string) error {
	f, err := filters.Open(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Manifest().Kind != filters.KindTransformation {
		return fmt.Errorf("filter test: %s is a %s; test runs transformations", f.Name(), f.Manifest().Kind)
	}
	eng.Registry().SetGuests(oneGuest{name: f.Name(), g: guest{filters.Transformation{Filter: f}}})
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	step := f.Name()
	if len(params) > 0 {
		step += ":" + strings.Join(params, ",")
	}
	chain, err := eng.ParseChain([]string{step})
	if err != nil {
		return err
	}
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(out), "."))
	if format == "jpeg" {
		format = "jpg"
	}
	start := time.Now()
	res, err := eng.Process(ctx, src, engine.Request{Chain: chain, Format: format})
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, res.Data, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %dx%d %s in %s\n", out, res.Width, res.Height, res.Mime, time.Since(start).Round(time.Millisecond))
	return nil
}

// oneGuest is the guest set of `vitrine filter test`.
type oneGuest struct {
	name string
	g    engine.Guest
}

func (o oneGuest) Guest(name string) (engine.Guest, bool) { return o.g, name == o.name }
func (o oneGuest) GuestNames() []string                   { return []string{o.name} }

const filterPushUsage = `usage:
  vitrine filter push DIR [--url URL] [--public KEY] [--private KEY] [--name NAME] [--activate=false]
  vitrine filter rollback NAME [VERSION] [--url URL] [--public KEY] [--private KEY]
push sends DIR's filter.json and filter.wasm to PUT /filters/<name> (name: the manifest's, or
--name); the server compiles the version as a reload would and, unless --activate=false, makes it
the version every instance serves. rollback makes VERSION (a full version or a prefix of 7 or more
digits; default the previous one) the active version again. The server is --url, else $VITRINE_URL;
keys are as vitrine sign takes them: --public, else $VITRINE_PUBLIC_KEY; --private, else
$VITRINE_PRIVATE_KEY, else the key stored under --config/--data.
`

// filterRemoteLine is the command line of `vitrine filter push` and
// `vitrine filter rollback`, and its flags' values.
type filterRemoteLine struct {
	*command
	f                         commonFlags
	server, pub, priv, filter string
	activate                  bool
}

// newFilterRemote returns the command line of `vitrine filter <sub>`, push
// or rollback.
func newFilterRemote(sub string) *filterRemoteLine {
	l := &filterRemoteLine{command: newCommand("filter "+sub, filterPushUsage)}
	l.f.register(l.FlagSet)
	l.StringVar(&l.server, "url", "", "the server's base URL (default $VITRINE_URL)")
	l.StringVar(&l.pub, "public", "", "public key (default $VITRINE_PUBLIC_KEY)")
	l.StringVar(&l.priv, "private", "", "private key (default $VITRINE_PRIVATE_KEY, else the one stored under --config/--data)")
	l.StringVar(&l.filter, "name", "", "push: the filter's name (default the manifest's)")
	l.BoolVar(&l.activate, "activate", true, "push: make the version active at once")
	return l
}

// filterRemote is `vitrine filter push` and `vitrine filter rollback`:
// signed writes to a running server (filters/README.md, Filters through the API).
func filterRemote(ctx context.Context, sub string, args []string) error {
	cmd := newFilterRemote(sub)
	min, max := 1, 1
	if sub == "rollback" {
		max = 2
	}
	pos, err := cmd.parse(args, min, max)
	if err != nil {
		return err
	}
	base := strings.TrimRight(firstOf(cmd.server, os.Getenv("VITRINE_URL")), "/")
	if base == "" {
		return cmd.errorf("filter %s: no server: give --url or set VITRINE_URL", sub)
	}
	publicKey := firstOf(cmd.pub, os.Getenv("VITRINE_PUBLIC_KEY"))
	if publicKey == "" {
		return cmd.errorf("filter %s: no public key: give --public or set VITRINE_PUBLIC_KEY", sub)
	}
	private := firstOf(cmd.priv, os.Getenv("VITRINE_PRIVATE_KEY"))
	if private == "" {
		if private, err = storedPrivateKey(ctx, cmd.f, publicKey); err != nil {
			return err
		}
	}
	c := remote{base: base, public: publicKey, private: private}
	if sub == "rollback" {
		body := []byte{}
		if len(pos) == 2 {
			body, _ = json.Marshal(map[string]string{"version": pos[1]})
		}
		var res api.DeployedFilter
		if err := c.send(ctx, http.MethodPost, "/filters/"+pos[0]+"/rollback", "application/json", body, &res); err != nil {
			return fmt.Errorf("filter rollback: %w", err)
		}
		fmt.Printf("rolled back: %s now serves %s (was %s)\n", res.Name, res.Version, res.Previous)
		return printRollout(res)
	}
	manifest, err := os.ReadFile(filepath.Join(pos[0], "filter.json"))
	if err != nil {
		return fmt.Errorf("filter push: %w", err)
	}
	wasm, err := os.ReadFile(filepath.Join(pos[0], "filter.wasm"))
	if err != nil {
		return fmt.Errorf("filter push: %w", err)
	}
	if cmd.filter == "" {
		var m struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(manifest, &m); err != nil || m.Name == "" {
			return fmt.Errorf("filter push: %s: no name in filter.json; give --name", filepath.Join(pos[0], "filter.json"))
		}
		cmd.filter = m.Name
	}
	path := "/filters/" + cmd.filter
	if !cmd.activate {
		path += "?activate=false"
	}
	var res api.DeployedFilter
	if err := c.send(ctx, http.MethodPut, path, "application/x-tar", api.FilterBundleTar(manifest, wasm), &res); err != nil {
		return fmt.Errorf("filter push: %w", err)
	}
	if !cmd.activate {
		fmt.Printf("pushed %s: %d versions, active %s\n", res.Name, len(res.Versions), cmpOr(res.Version, "none"))
		return nil
	}
	r := res.Rollout
	if r == nil || r.State == api.RolloutActive {
		fmt.Printf("pushed %s: version %s is active (%s)\n", res.Name, res.Version, plural(len(res.Versions), "version"))
	} else {
		fmt.Printf("pushed %s: version %s (%s)\n", res.Name, res.Version, plural(len(res.Versions), "version"))
	}
	return printRollout(res)
}

// printRollout prints where the active version runs, per instance, and
// fails unless every instance runs it (filters/README.md, Filters through the API).
func printRollout(res api.DeployedFilter) error {
	r := res.Rollout
	if r == nil {
		return nil
	}
	ready := 0
	for _, in := range r.Instances {
		line := "  " + in.Instance + ": " + in.State
		if in.Error != "" {
			line += ": " + in.Error
		}
		fmt.Println(line)
		if in.State == "ready" {
			ready++
		}
	}
	switch r.State {
	case api.RolloutActive:
		fmt.Printf("active on %s\n", plural(len(r.Instances), "instance"))
		return nil
	case api.RolloutLoading:
		return fmt.Errorf("%s version %s is not active yet: ready on %d of %s, the others still loading (GET /filters follows it)",
			res.Name, res.Version, ready, plural(len(r.Instances), "instance"))
	}
	return fmt.Errorf("%s version %s is active on %d of %s only: the others cannot run it (see above)",
		res.Name, res.Version, ready, plural(len(r.Instances), "instance"))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// remote sends signed writes to a server.
type remote struct{ base, public, private string }

// send signs and sends one write and decodes its JSON answer into out; an
// error status comes back as an error with the server's message.
func (r remote) send(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	s, err := api.SignWrite(method, r.base+path, r.public, r.private, time.Now())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	for _, h := range s.Headers() {
		req.Header.Set(h.Name, h.Value)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, e.Error.Message)
		}
		return fmt.Errorf("%s %s: %s", method, path, res.Status)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errors.New("the server's answer is not JSON: " + err.Error())
	}
	return nil
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
