// Command vitrine is a self-hosted image storage and transformation service.
//
//	vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
//	vitrine keys add|list|delete|rotate ...
//	vitrine sign [--public KEY] [--private KEY] [--method M] URL
//	vitrine migrate [--dry-run]
//	vitrine filter check|test ...
//	vitrine fsck [--repair]
//	vitrine version
//
// With no configuration it runs on the embedded default: SQLite at
// DIR/vitrine.db and image files under DIR/images, DIR being ./data.
//
// Package main is the wiring only, one job a file: main.go dispatches the
// subcommands and holds their shared flag parsing, config.go the
// configuration file and environment, stores.go opening the stores,
// app.go the application value (New, Run: the ordered start and stop, the
// background workers, readiness), serve.go `vitrine serve` and the start
// steps, worker.go the shape of background work and worker_<name>.go each
// worker, wire_filters.go the adapters between filters and engine/api, and
// cli_<command>.go each subcommand. The service itself is
// package api; the signing `vitrine sign` prints is api.SignRead and
// api.SignWrite.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stderr)) }

// run runs the subcommand args name and returns the exit status: 0 on
// success (and for --help), 2 for a command line it cannot run, 1 for any
// other failure.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	// Changes a command makes are recorded in the audit log as the CLI's;
	// serve's requests carry their own key.
	cli := storage.WithActor(ctx, storage.Actor{Key: "cli"})
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:])
	case "keys":
		err = keysCommand(cli, args[1:])
	case "sign":
		err = signCommand(ctx, args[1:])
	case "migrate":
		err = runMigrate(ctx, args[1:])
	case "filter":
		err = filterCommand(ctx, args[1:])
	case "fsck":
		err = runFsck(cli, args[1:])
	case "analyze":
		err = runAnalyze(cli, args[1:])
	case "variations":
		err = runVariations(cli, args[1:])
	case "version":
		err = runVersion(args[1:])
	case "help", "-h", "--help":
		usage(os.Stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "vitrine: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	return exitStatus(err, stderr)
}

// exitStatus reports err on stderr and returns the status for it.
func exitStatus(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "vitrine:", err)
		ue.cmd.printUsage(stderr)
		return 2
	default:
		fmt.Fprintln(stderr, "vitrine:", err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
  vitrine keys add|list|delete|rotate ...   (vitrine keys --help)
  vitrine sign [--public KEY] [--private KEY] [--method M] URL   (vitrine sign --help)
  vitrine migrate [--dry-run] [--config FILE] [--data DIR]
  vitrine filter check|test <dir> ...   (vitrine filter --help)
  vitrine fsck [--repair] [--json] [--grace D] [--config FILE] [--data DIR]
  vitrine analyze [--user U] [--force] [--json] [--config FILE] [--data DIR]
  vitrine variations [--user U] [--config FILE] [--data DIR]
  vitrine version
every command takes --help
`)
}

// commonFlags are the flags every subcommand that opens the stores takes.
type commonFlags struct {
	config, data string
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&f.data, "data", "./data", "data directory of the embedded default (SQLite and image files)")
}

// usageError is a command line that cannot run: a flag the command does not
// know, a bad flag value, or the wrong positional arguments. main prints it
// with the command's usage and exits with status 2.
type usageError struct {
	cmd *command
	msg string
}

func (e *usageError) Error() string { return e.msg }

// command is one subcommand's command line. Every subcommand parses through
// it, so all are strict in the same way: flags may come anywhere among the
// positionals (everything after -- is positional), an unknown flag or a
// wrong number of positionals is a usageError, and -h or --help prints the
// usage on standard output and succeeds.
type command struct {
	*flag.FlagSet
	name  string // as typed: "keys add"
	usage string // the synopsis, printed above the flags
}

// newCommand returns the command line of `vitrine <name>`.
func newCommand(name, usage string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // why: errors and help are printed once, by main
	return &command{FlagSet: fs, name: name, usage: usage}
}

// printUsage writes the synopsis and the flags with their defaults.
func (c *command) printUsage(w io.Writer) {
	fmt.Fprint(w, c.usage)
	has := false
	c.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprintln(w, "flags:")
		c.SetOutput(w)
		c.PrintDefaults()
		c.SetOutput(io.Discard)
	}
}

// errorf returns a usageError of this command.
func (c *command) errorf(format string, a ...any) error {
	return &usageError{cmd: c, msg: fmt.Sprintf(format, a...)}
}

// parse parses args and returns the positionals, refusing fewer than min or
// more than max of them. On -h or --help it prints the usage and returns
// flag.ErrHelp, which main treats as success.
func (c *command) parse(args []string, min, max int) ([]string, error) {
	pos, err := c.parseAll(args)
	if errors.Is(err, flag.ErrHelp) {
		c.printUsage(os.Stdout)
		return nil, err
	}
	if err != nil {
		return nil, c.errorf("%s: %v", c.name, err)
	}
	if len(pos) < min || len(pos) > max {
		if max == 0 {
			return nil, c.errorf("%s: unexpected argument %q", c.name, pos[0])
		}
		if min == max {
			return nil, c.errorf("%s: want %d argument(s), got %d", c.name, min, len(pos))
		}
		return nil, c.errorf("%s: want %d to %d arguments, got %d", c.name, min, max, len(pos))
	}
	return pos, nil
}

// parseAll parses flags wherever they are among the positional arguments
// (flag.Parse stops at the first non-flag) and returns the positionals.
func (c *command) parseAll(args []string) ([]string, error) {
	var pos []string
	for {
		if err := c.Parse(args); err != nil {
			return nil, err
		}
		rest := c.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// isHelp tells whether a word asks for help instead of naming a subcommand.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// firstOf returns the first non-empty value.
func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
