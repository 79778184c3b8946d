package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

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
