package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"vitrine/api"
	"vitrine/storage"
)

// cli is what the command-line subcommands read and write; tests replace
// it with buffers, a fixed environment and a fixed clock.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
}

func osCLI() *cli {
	return &cli{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
}

// runKeys is `vitrine keys`.
func runKeys(args []string) error { return quietHelp(osCLI().keys(context.Background(), args)) }

// quietHelp turns -h (whose usage the flag set has printed) into success.
func quietHelp(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

const keysUsage = `usage:
  vitrine keys add <publicKey> [--private KEY] [--group NAME | --resources a,b] [--users a,b | --users '*']
  vitrine keys list
  vitrine keys delete <publicKey>
  vitrine keys rotate <publicKey> [--private KEY]
each also takes --config FILE and --data DIR, the same as serve
`

// namePattern is what public keys and user names look like; the API checks
// the same (RULINGS.md 6).
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// keys manages the key pairs and access rules stored in the database, with
// no server running.
func (c *cli) keys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, keysUsage)
		return errors.New("keys: missing subcommand")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(c.stderr, keysUsage)
		return nil
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() { fmt.Fprint(c.stderr, keysUsage); fs.PrintDefaults() }
	var f commonFlags
	f.register(fs)
	private := new(string)
	if args[0] == "add" || args[0] == "rotate" {
		fs.StringVar(private, "private", "", "private key (default: 32 random bytes from the system CSPRNG, hex)")
	}
	group, resources, users := new(string), new(string), new(string)
	if args[0] == "add" {
		fs.StringVar(group, "group", "", "group the rule grants (read-only, read-write, all or a configured one)")
		fs.StringVar(resources, "resources", "", "comma-separated resources the rule grants, instead of --group")
		fs.StringVar(users, "users", "", "comma-separated users the rule applies to, or '*' (default: the public key)")
	}
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	want := 1
	switch args[0] {
	case "list":
		want = 0
	case "add", "delete", "rotate":
	default:
		fmt.Fprint(c.stderr, keysUsage)
		return fmt.Errorf("keys: unknown subcommand %q", args[0])
	}
	if len(pos) != want {
		fmt.Fprint(c.stderr, keysUsage)
		return fmt.Errorf("keys %s: want %d argument(s), got %d", args[0], want, len(pos))
	}
	if want == 1 && !namePattern.MatchString(pos[0]) {
		return fmt.Errorf("keys %s: invalid public key %q (want 1-64 of a-z A-Z 0-9 _ -)", args[0], pos[0])
	}
	st, err := openDB(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	switch args[0] {
	case "list":
		return c.listKeys(ctx, st)
	case "delete":
		if err := refuseConfigKey(st, pos[0]); err != nil {
			return err
		}
		if err := st.db.DeleteKey(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Deleted key %s and its access rules.\n", pos[0])
		return nil
	case "rotate":
		return c.rotateKey(ctx, st, pos[0], *private)
	}
	rule, err := ruleFromFlags(ctx, st, pos[0], *group, *resources, *users)
	if err != nil {
		return err
	}
	return c.addKey(ctx, st, pos[0], *private, rule)
}

// parseArgs parses flags wherever they are among the positional arguments
// (flag.Parse stops at the first non-flag) and returns the positionals.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
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

// openDB opens only the database: key management needs no blob store.
func openDB(ctx context.Context, f commonFlags) (*stores, error) {
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return nil, err
	}
	secret, err := loadSecret(cfg, f.data)
	if err != nil {
		return nil, err
	}
	st := &stores{cfg: cfg}
	if st.db, err = storage.Open(ctx, cfg.Database, storage.Options{Secret: secret}); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return st, nil
}

// refuseConfigKey fails for a key defined in the configuration file, which
// the service treats as immutable.
func refuseConfigKey(st *stores, publicKey string) error {
	for _, k := range st.cfg.AccessControl.Keys {
		if k.PublicKey == publicKey {
			return fmt.Errorf("key %s is defined in the configuration file; change it there", publicKey)
		}
	}
	return nil
}

// ruleFromFlags builds the rule `keys add` creates; nil when neither
// --group nor --resources is given.
func ruleFromFlags(ctx context.Context, st *stores, publicKey, group, resources, users string) (*storage.Rule, error) {
	if group != "" && resources != "" {
		return nil, errors.New("keys add: give --group or --resources, not both")
	}
	if group == "" && resources == "" {
		if users != "" {
			return nil, errors.New("keys add: --users needs --group or --resources")
		}
		return nil, nil
	}
	r := &storage.Rule{Group: group, Resources: splitList(resources), Users: []string{publicKey}}
	if resources != "" && len(r.Resources) == 0 {
		return nil, errors.New("keys add: --resources is empty")
	}
	if users != "" {
		if r.Users = splitList(users); len(r.Users) == 0 {
			return nil, errors.New("keys add: --users is empty")
		}
	}
	for _, u := range r.Users {
		if u == "*" && len(r.Users) > 1 {
			return nil, errors.New("keys add: --users '*' stands alone")
		}
		if u != "*" && !namePattern.MatchString(u) {
			return nil, fmt.Errorf("keys add: invalid user %q", u)
		}
	}
	if group == "" || slices.Contains(api.BuiltinGroups(), group) {
		return r, nil
	}
	if _, ok := st.cfg.AccessControl.Groups[group]; ok {
		return r, nil
	}
	if _, err := st.db.Group(ctx, group); errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("keys add: group %q is not defined (built-in: %s)", group, strings.Join(api.BuiltinGroups(), ", "))
	} else if err != nil {
		return nil, err
	}
	return r, nil
}

func (c *cli) addKey(ctx context.Context, st *stores, publicKey, private string, rule *storage.Rule) error {
	if err := refuseConfigKey(st, publicKey); err != nil {
		return err
	}
	if _, err := st.db.Rules(ctx, publicKey); err == nil {
		return fmt.Errorf("key %s: %w; use `vitrine keys rotate %s` for a new private key", publicKey, storage.ErrExist, publicKey)
	} else if !errors.Is(err, storage.ErrNotExist) {
		return err
	}
	if private == "" {
		private = randomHex(32)
	}
	if _, err := st.db.PutKey(ctx, storage.Key{PublicKey: publicKey, PrivateKey: private}); err != nil {
		return err
	}
	if rule != nil {
		if _, err := st.db.AddRules(ctx, publicKey, []storage.Rule{*rule}); err != nil {
			_ = st.db.DeleteKey(ctx, publicKey)
			return err
		}
	}
	c.printKey("Created key "+publicKey, publicKey, private)
	if rule == nil {
		fmt.Fprintf(c.stderr, "Note: %s has no access rules yet; add one with --group or --resources.\n", publicKey)
	}
	return nil
}

func (c *cli) rotateKey(ctx context.Context, st *stores, publicKey, private string) error {
	if err := refuseConfigKey(st, publicKey); err != nil {
		return err
	}
	// Rules, unlike Key, tells whether the key exists without decrypting it,
	// so a key sealed under a lost secret can still be given a new one.
	if _, err := st.db.Rules(ctx, publicKey); err != nil {
		return err
	}
	if private == "" {
		private = randomHex(32)
	}
	if _, err := st.db.PutKey(ctx, storage.Key{PublicKey: publicKey, PrivateKey: private}); err != nil {
		return err
	}
	c.printKey("New private key for "+publicKey, publicKey, private)
	return nil
}

func (c *cli) printKey(title, publicKey, private string) {
	fmt.Fprintf(c.stdout, "%s (the private key is shown only this once):\n  public key:  %s\n  private key: %s\n",
		title, publicKey, private)
}

// listKeys prints one line per rule, configured keys first; private keys
// are never shown.
func (c *cli) listKeys(ctx context.Context, st *stores) error {
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PUBLIC KEY\tSOURCE\tUSERS\tGRANTS")
	configured := map[string]bool{}
	for _, k := range st.cfg.AccessControl.Keys {
		configured[k.PublicKey] = true
		var rules []storage.Rule
		for _, r := range k.Rules {
			rules = append(rules, storage.Rule{Group: r.Group, Resources: r.Resources, Users: r.Users})
		}
		printRules(w, k.PublicKey, "config", rules)
	}
	keys, err := st.db.Keys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		rules, err := st.db.Rules(ctx, k.PublicKey)
		if err != nil {
			return err
		}
		source := "database"
		if configured[k.PublicKey] {
			source = "database (unused: the config defines it)"
		}
		printRules(w, k.PublicKey, source, rules)
	}
	return w.Flush()
}

func printRules(w io.Writer, publicKey, source string, rules []storage.Rule) {
	if len(rules) == 0 {
		fmt.Fprintf(w, "%s\t%s\t-\t(no rules)\n", publicKey, source)
	}
	for _, r := range rules {
		grants := "group " + r.Group
		if r.Group == "" {
			grants = strings.Join(r.Resources, ",")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", publicKey, source, strings.Join(r.Users, ","), grants)
	}
}

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
