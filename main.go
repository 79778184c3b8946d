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
// subcommands, cli.go is their shared flag parsing, config.go the
// configuration file and environment, stores.go opening the stores,
// serve.go start and stop, wire_filters.go and wire_web.go the adapters
// between packages (filters and engine/api, storage and web), and
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
