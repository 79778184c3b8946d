// Command vitrine is a self-hosted image storage and transformation service.
//
//	vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
//	vitrine keys add|list|delete|rotate ...
//	vitrine sign [--public KEY] [--private KEY] [--method M] URL
//	vitrine migrate [--dry-run]
//	vitrine filter check|test ...
//
// With no configuration it runs on the embedded default: SQLite at
// DIR/vitrine.db and image files under DIR/images, DIR being ./data.
//
// Package main is the wiring only, one job a file: main.go dispatches the
// subcommands, cli.go is their shared flag parsing, config.go the
// configuration file and environment, stores.go opening the stores,
// serve.go start and stop, wire_filters.go the adapters between filters and
// engine/api, and cli_<command>.go each subcommand. The service itself is
// package api; the signing `vitrine sign` prints is api.SignRead and
// api.SignWrite.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "keys":
		err = runKeys(os.Args[2:])
	case "sign":
		err = runSign(os.Args[2:])
	case "migrate":
		err = runMigrate(os.Args[2:])
	case "filter":
		err = runFilter(os.Args[2:])
	case "fsck":
		err = runFsck(os.Args[2:])
	case "help", "-h", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "vitrine: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vitrine:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
  vitrine keys add|list|delete|rotate ...   (vitrine keys -h)
  vitrine sign [--public KEY] [--private KEY] [--method M] URL   (vitrine sign -h)
  vitrine migrate [--dry-run] [--config FILE] [--data DIR]
  vitrine filter check|test <dir> ...   (vitrine filter -h)
  vitrine fsck [--repair] [--json] [--grace D] [--config FILE] [--data DIR]
`)
}
