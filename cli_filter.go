package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

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

// filterCommand is `vitrine filter`: the test kit for filter authors.
func filterCommand(ctx context.Context, args []string) error {
	top := newCommand("filter", filterUsage)
	if len(args) == 0 || isHelp(args[0]) {
		_, err := top.parse([]string{"--help"}, 0, 0)
		if len(args) == 0 {
			return top.errorf("filter: missing subcommand")
		}
		return err
	}
	if args[0] == "push" || args[0] == "rollback" {
		return filterRemote(ctx, args[0], args[1:])
	}
	if args[0] != "check" && args[0] != "test" {
		return top.errorf("filter: unknown subcommand %q", args[0])
	}
	cmd := newCommand("filter "+args[0], filterUsage)
	allow := cmd.String("allow", "", "capabilities to grant, as filters.allow does: clock,random")
	maxModule := cmd.Int64("max-module-bytes", filters.DefaultMaxModuleBytes, "refuse a larger filter.wasm, as filters.maxModuleBytes does")
	compileTimeout := cmd.Duration("compile-timeout", filters.DefaultCompileTimeout, "bound on compiling and starting, as filters.compileTimeout")
	in := cmd.String("image", "", "test: input image")
	out := cmd.String("out", "", "test: output image (png, jpg, webp, gif, avif)")
	var params paramFlags
	cmd.Var(&params, "param", "test: a parameter k=v (repeat)")
	pos, err := cmd.parse(args[1:], 1, 1)
	if err != nil {
		return err
	}
	if args[0] == "test" && (*in == "" || *out == "") {
		return cmd.errorf("filter test: --image and --out are required")
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return err
	}
	defer engine.Shutdown()
	ec := eng.Config()
	cfg := filters.Config{Allow: splitList(*allow), Reserved: eng.Registry().Names(),
		MaxWidth: ec.MaxWidth, MaxHeight: ec.MaxHeight, MaxPixels: ec.MaxPixels,
		MaxModuleBytes: *maxModule, CompileTimeout: *compileTimeout,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if args[0] == "test" {
		return testFilter(ctx, eng, cfg, pos[0], *in, *out, params)
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
