// Command vitrine is a self-hosted image storage and transformation service.
//
//	vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
//	vitrine keys add|list|delete|rotate ...
//	vitrine sign [--public KEY] [--private KEY] [--method M] URL
//	vitrine migrate [--dry-run]
//	vitrine filter push|rollback|check|test ...
//	vitrine fsck [--repair]
//	vitrine backup DEST
//	vitrine restore SRC
//	vitrine copy --to FILE [--cutover]
//	vitrine import imbo --database URL --storage URL
//	vitrine analyze [--user U] [--force]
//	vitrine variations [--user U]
//	vitrine version
//
// With no configuration it runs on the embedded default: SQLite at
// DIR/vitrine.db and image files under DIR/images, DIR being ./data.
//
// Package main is the wiring only (e2e/README.md, Layout): main.go dispatches the
// subcommands (one table, commands) and holds what they share (the flag
// parsing, the progress line); cli_<command>.go is each subcommand
// (cli_store.go the store's upkeep: fsck, backup, restore, copy and import);
// config.go the configuration file and environment; app.go the
// application value, New and Run with every start step in order and the
// stop; stores.go opening the stores; workers.go the one shape of
// background work and the table of workers; filters.go the adapters
// between filters and engine/api and the sync of filters deployed through
// the API; tracing.go OpenTelemetry. What the workers do lives in the
// packages (storage's passes, api/outbox, api's stored variations); the
// signing `vitrine sign` prints is api.SignRead and api.SignWrite.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/vitrine/vitrine/engine"
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
	if isHelp(args[0]) {
		usage(os.Stdout)
		return 0
	}
	// Changes a command makes are recorded in the audit log as the CLI's;
	// serve's requests carry their own key.
	cli := storage.WithActor(ctx, storage.Actor{Key: "cli"})
	for _, c := range commands {
		if c.name == args[0] {
			return exitStatus(c.run(ctx, cli, args[1:]), stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "vitrine: unknown command %q: the command comes first, then its flags in any order (vitrine keys --data DIR list)\n", args[0])
	} else {
		fmt.Fprintf(stderr, "vitrine: unknown command %q\n", args[0])
	}
	usage(stderr)
	return 2
}

// commands are the subcommands, as usage lists them: each runs with the
// caller's context (ctx) or the CLI's (cli: its changes are audited as
// the CLI's) and the arguments after its name.
var commands = []struct {
	name, synopsis string
	run            func(ctx, cli context.Context, args []string) error
}{
	{"serve", "[--config FILE] [--listen ADDR] [--data DIR]",
		func(ctx, _ context.Context, args []string) error { return serve(ctx, args) }},
	{"keys", "add|list|delete|rotate ...   (vitrine keys --help)",
		func(_, cli context.Context, args []string) error { return keysCommand(cli, args) }},
	{"sign", "[--public KEY] [--private KEY] [--method M] URL   (vitrine sign --help)",
		func(ctx, _ context.Context, args []string) error { return signCommand(ctx, args) }},
	{"migrate", "[--dry-run] [--config FILE] [--data DIR]",
		func(ctx, _ context.Context, args []string) error { return runMigrate(ctx, args) }},
	{"filter", "push|rollback|check|test ...   (vitrine filter --help)",
		func(ctx, _ context.Context, args []string) error { return filterCommand(ctx, args) }},
	{"fsck", "[--repair] [--json] [--grace D] [--config FILE] [--data DIR]",
		func(_, cli context.Context, args []string) error { return runFsck(cli, args) }},
	{"backup", "[--json] [--config FILE] [--data DIR] DEST",
		func(ctx, _ context.Context, args []string) error { return runBackup(ctx, args) }},
	{"restore", "[--snapshot NAME] [--json] [--config FILE] [--data DIR] SRC",
		func(ctx, _ context.Context, args []string) error { return runRestore(ctx, args) }},
	{"copy", "--to FILE [--to-data DIR] [--cutover] [--json] [--config FILE] [--data DIR]",
		func(_, cli context.Context, args []string) error { return runCopy(cli, args) }},
	{"import", "imbo --database URL --storage URL [--json] [--config FILE] [--data DIR]",
		func(_, cli context.Context, args []string) error { return runImport(cli, args) }},
	{"analyze", "[--user U] [--force] [--json] [--config FILE] [--data DIR]",
		func(_, cli context.Context, args []string) error { return runAnalyze(cli, args) }},
	{"variations", "[--user U] [--config FILE] [--data DIR]",
		func(_, cli context.Context, args []string) error { return runVariations(cli, args) }},
	{"version", "",
		func(_, _ context.Context, args []string) error { return runVersion(args) }},
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

// usage lists every command (commands).
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage:")
	for _, c := range commands {
		fmt.Fprintln(w, strings.TrimRight("  vitrine "+c.name+" "+c.synopsis, " "))
	}
	fmt.Fprintln(w, "every command takes --help")
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

// subcommand splits the arguments of a command that has subcommands (keys,
// filter) into the subcommand, the first argument that is neither a flag
// nor a flag's value, and the others, so that flags may come before it
// (`vitrine keys --data DIR list`) as well as after it. lines are the
// subcommands' command lines: a flag one of them defines takes a value
// unless it is a boolean; a flag none defines takes none, and is left for
// the subcommand to refuse. sub is "" when every argument is a flag.
func subcommand(args []string, lines ...*command) (sub string, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" { // what follows is positional: the subcommand first
			if i+1 == len(args) {
				return "", args
			}
			return args[i+1], append(slices.Clone(args[:i+1]), args[i+2:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			return a, append(slices.Clone(args[:i]), args[i+1:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !hasValue && takesValue(name, lines) {
			i++
		}
	}
	return "", args
}

// takesValue reports whether a flag that one of lines defines is not a
// boolean (so the next argument is its value).
func takesValue(name string, lines []*command) bool {
	for _, l := range lines {
		if f := l.Lookup(name); f != nil {
			b, ok := f.Value.(interface{ IsBoolFlag() bool })
			return !ok || !b.IsBoolFlag()
		}
	}
	return false
}

// noSubcommand answers a command with subcommands given none: its usage
// when asked for help (-h, --help or help among args), a usageError
// listing them otherwise.
func (c *command) noSubcommand(args []string, subs []string) error {
	if slices.ContainsFunc(args, isHelp) {
		_, err := c.parse([]string{"--help"}, 0, 0)
		return err
	}
	return c.errorf("%s: missing subcommand (%s)", c.name, strings.Join(subs, ", "))
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

const versionUsage = `usage:
  vitrine version
prints vitrine's module version, the commit it was built from, and the Go and libvips versions
`

// runVersion is `vitrine version`.
func runVersion(args []string) error {
	cmd := newCommand("version", versionUsage)
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	module, commit := buildVersion()
	fmt.Printf("vitrine %s\ncommit  %s\ngo      %s\nlibvips %s\n", module, commit, runtime.Version(), engine.LibvipsVersion())
	return nil
}

// buildVersion returns the main module's version ("(devel)" when built from
// a checkout rather than `go install ...@version`) and the commit recorded
// by the go command's VCS stamping ("unknown" without it), marked
// "(modified)" when the work tree had uncommitted changes.
func buildVersion() (module, commit string) {
	module, commit = "(devel)", "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return module, commit
	}
	if info.Main.Version != "" {
		module = info.Main.Version
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified {
		commit += " (modified)"
	}
	return module, commit
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// terminalProgress is progress on standard error when it is a terminal
// (nil otherwise), and end, which closes its line before the summary.
func terminalProgress() (show func(string, int64, int64), end func()) {
	if !isTerminal(os.Stderr) {
		return nil, func() {}
	}
	return progress(os.Stderr), func() { fmt.Fprintln(os.Stderr) }
}

// progress redraws one status line per phase, at most ten times a second:
// a bar where the phase's total is known, a count otherwise.
func progress(w io.Writer) func(string, int64, int64) {
	var last time.Time
	var lastPhase string
	return func(phase string, done, total int64) {
		if phase == lastPhase && time.Since(last) < 100*time.Millisecond && done < total {
			return
		}
		if phase != lastPhase && lastPhase != "" {
			fmt.Fprintln(w)
		}
		last, lastPhase = time.Now(), phase
		if total <= 0 {
			fmt.Fprintf(w, "\r%-16s %d", phase, done)
			return
		}
		const width = 30
		filled := int(min(done, total) * width / total)
		fmt.Fprintf(w, "\r%-16s [%s%s] %d/%d", phase, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
	}
}
