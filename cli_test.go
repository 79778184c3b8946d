package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIRefusesBadCommandLines checks that every subcommand refuses unknown
// flags and stray or missing positionals with exit status 2 and a message
// naming the problem, before it opens or changes anything.
func TestCLIRefusesBadCommandLines(t *testing.T) {
	for _, k := range []string{"VITRINE_URL", "VITRINE_PUBLIC_KEY", "VITRINE_PRIVATE_KEY"} {
		t.Setenv(k, "")
	}
	data := t.TempDir()
	d := "--data=" + data
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{}, "usage:"},
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"migrate", d, "x", "--dry-run"}, `migrate: unexpected argument "x"`},
		{[]string{"migrate", d, "--bogus"}, "migrate: flag provided but not defined: -bogus"},
		{[]string{"serve", d, "stray"}, `serve: unexpected argument "stray"`},
		{[]string{"serve", d, "--listen"}, "serve: flag needs an argument: -listen"},
		{[]string{"fsck", d, "stray"}, `fsck: unexpected argument "stray"`},
		{[]string{"fsck", d, "--grace", "soon"}, `fsck: invalid value "soon" for flag -grace`},
		{[]string{"keys"}, "keys: missing subcommand"},
		{[]string{"keys", "frob"}, `keys: unknown subcommand "frob"`},
		{[]string{"keys", "list", d, "extra"}, `keys list: unexpected argument "extra"`},
		{[]string{"keys", "delete", d}, "keys delete: want 1 argument(s), got 0"},
		{[]string{"keys", "list", d, "--group", "all"}, "keys list: flag provided but not defined: -group"},
		{[]string{"keys", "add", d, "--", "--group=all"}, `keys add: invalid public key "--group=all"`},
		{[]string{"sign"}, "sign: want 1 argument(s), got 0"},
		{[]string{"sign", "http://a/users/u/images", "http://b/"}, "sign: want 1 argument(s), got 2"},
		{[]string{"sign", "--nope", "http://a/"}, "sign: flag provided but not defined: -nope"},
		{[]string{"filter"}, "filter: missing subcommand"},
		{[]string{"filter", "frob", "dir"}, `filter: unknown subcommand "frob"`},
		{[]string{"filter", "check"}, "filter check: want 1 argument(s), got 0"},
		{[]string{"filter", "test", "dir"}, "filter test: --image and --out are required"},
		{[]string{"filter", "check", "dir", "--param", "novalue"}, `want k=v, got "novalue"`},
		{[]string{"filter", "push"}, "filter push: want 1 argument(s), got 0"},
		{[]string{"filter", "push", "dir"}, "filter push: no server: give --url or set VITRINE_URL"},
		{[]string{"filter", "push", "dir", "--url", "http://127.0.0.1:1"}, "filter push: no public key"},
		{[]string{"filter", "rollback", "a", "b", "c"}, "filter rollback: want 1 to 2 arguments, got 3"},
		{[]string{"keys", d}, "keys: missing subcommand (add, list, delete, rotate)"},
		{[]string{"keys", d, "delete"}, "keys delete: want 1 argument(s), got 0"},
		{[]string{"keys", "--data", data, "frob"}, `keys: unknown subcommand "frob"`},
		{[]string{"keys", "--group", "all", "list", d}, "keys list: flag provided but not defined: -group"},
		{[]string{"filter", "--image", "in", "--out", "out", "test"}, "filter test: want 1 argument(s), got 0"},
		{[]string{"filter", "--url", "http://127.0.0.1:1", "push", "dir"}, "filter push: no public key"},
		{[]string{"filter", "--activate", "push", "dir"}, "filter push: no server"},
		{[]string{"--data", data, "keys", "list"}, `unknown command "--data": the command comes first, then its flags in any order`},
		{[]string{"version", "extra"}, `version: unexpected argument "extra"`},
		{[]string{"version", "--short"}, "version: flag provided but not defined: -short"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			if status := run(context.Background(), tt.args, &stderr); status != 2 {
				t.Errorf("exit status %d, want 2\n%s", status, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.msg) {
				t.Errorf("stderr does not say %q:\n%s", tt.msg, stderr.String())
			}
		})
	}
	if entries, _ := os.ReadDir(data); len(entries) > 0 {
		t.Errorf("a refused command line wrote to the data directory: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(data, "vitrine.db")); err == nil {
		t.Error("a refused migrate created the database")
	}
}

// TestCLIFlagsBeforeSubcommand: the flags of keys' subcommands may come
// before the subcommand as well as after it (README, Command line).
func TestCLIFlagsBeforeSubcommand(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{
		{"keys", "--data", data, "--private", "first", "add", "carol", "--group", "read-only"},
		{"keys", "--data=" + data, "list"},
		{"keys", "--private", "second", "--data", data, "rotate", "carol"},
	} {
		var stderr bytes.Buffer
		if status := run(context.Background(), args, &stderr); status != 0 {
			t.Fatalf("%s: exit status %d\n%s", strings.Join(args, " "), status, stderr.String())
		}
	}
	st, err := openDB(context.Background(), commonFlags{data: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k, err := st.db.Key(context.Background(), "carol")
	if err != nil || k.PrivateKey != "second" {
		t.Fatalf("carol after add and rotate: %+v, %v; want the private key second", k, err)
	}
	rules, err := st.db.Rules(context.Background(), "carol")
	if err != nil || len(rules) != 1 || rules[0].Group != "read-only" {
		t.Fatalf("carol's rules: %+v, %v; want one of group read-only", rules, err)
	}
}

// TestCLIHelp checks that --help (and -h, and help for the commands with
// subcommands) succeeds on every subcommand without touching a store.
func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"serve", "--help"}, {"serve", "-h"}, {"migrate", "--help"}, {"fsck", "--help"},
		{"keys", "--help"}, {"keys", "help"}, {"keys", "add", "--help"}, {"keys", "list", "-h"},
		{"keys", "delete", "--help"}, {"keys", "rotate", "--help"}, {"sign", "--help"},
		{"filter", "--help"}, {"filter", "check", "--help"}, {"filter", "test", "-h"}, {"version", "--help"},
		{"filter", "push", "--help"}, {"filter", "rollback", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Chdir(t.TempDir()) // why: a command that wrongly ran would create ./data here
			var stderr bytes.Buffer
			if status := run(context.Background(), args, &stderr); status != 0 {
				t.Errorf("exit status %d, want 0\n%s", status, stderr.String())
			}
			if _, err := os.Stat("data"); err == nil {
				t.Error("help opened the stores")
			}
		})
	}
}

// TestBuildVersion checks the version fields vitrine version prints.
func TestBuildVersion(t *testing.T) {
	module, commit := buildVersion()
	if module == "" || commit == "" {
		t.Errorf("buildVersion() = %q, %q", module, commit)
	}
}

// TestSignUnknownKey: signing as a key the store does not hold fails with
// one sentence that names the key and what to do, without storage's text.
func TestSignUnknownKey(t *testing.T) {
	t.Setenv("VITRINE_PRIVATE_KEY", "")
	t.Setenv("VITRINE_PUBLIC_KEY", "")
	data := t.TempDir()
	var stderr bytes.Buffer
	if status := run(context.Background(), []string{"sign", "--data", data, "http://127.0.0.1/users/alice/images"}, &stderr); status != 1 {
		t.Errorf("exit status %d, want 1\n%s", status, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, "sign: no key alice in the configuration file or the database of sqlite://") ||
		!strings.Contains(msg, "give --private or set VITRINE_PRIVATE_KEY") || strings.Contains(msg, "storage:") {
		t.Errorf("stderr: %s", msg)
	}
}
