package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

const keysUsage = `usage:
  vitrine keys add <publicKey> [--private KEY] [--group NAME | --resources a,b] [--users a,b | --users '*']
  vitrine keys list
  vitrine keys delete <publicKey>
  vitrine keys rotate <publicKey> [--private KEY]
each also takes --config FILE and --data DIR, the same as serve
`

// keysSubcommands are the subcommands of `vitrine keys`.
var keysSubcommands = []string{"add", "list", "delete", "rotate"}

// keysLine is the command line of `vitrine keys <sub>` and its flags'
// values.
type keysLine struct {
	*command
	f                                commonFlags
	private, group, resources, users string
}

// newKeysLine returns the command line of `vitrine keys <sub>`.
func newKeysLine(sub string) *keysLine {
	l := &keysLine{command: newCommand("keys "+sub, keysUsage)}
	l.f.register(l.FlagSet)
	if sub == "add" || sub == "rotate" {
		l.StringVar(&l.private, "private", "", "private key (default: 32 random bytes from the system CSPRNG, hex)")
	}
	if sub == "add" {
		l.StringVar(&l.group, "group", "", "group the rule grants (read-only, read-write, all or a configured one)")
		l.StringVar(&l.resources, "resources", "", "comma-separated resources the rule grants, instead of --group")
		l.StringVar(&l.users, "users", "", "comma-separated users the rule applies to, or '*' (default: the public key)")
	}
	return l
}

// keysCommand is `vitrine keys`: it manages the key pairs and access rules
// stored in the database, with no server running.
func keysCommand(ctx context.Context, args []string) error {
	top := newCommand("keys", keysUsage)
	var lines []*command
	for _, sub := range keysSubcommands {
		lines = append(lines, newKeysLine(sub).command)
	}
	sub, rest := subcommand(args, lines...)
	switch {
	case sub == "" || isHelp(sub):
		return top.noSubcommand(args, keysSubcommands)
	case !slices.Contains(keysSubcommands, sub):
		return top.errorf("keys: unknown subcommand %q", sub)
	}
	want := 1
	if sub == "list" {
		want = 0
	}
	cmd := newKeysLine(sub)
	pos, err := cmd.parse(rest, want, want)
	if err != nil {
		return err
	}
	if want == 1 && !api.ValidName(pos[0]) {
		return cmd.errorf("keys %s: invalid public key %q (want 1-64 of a-z A-Z 0-9 _ -)", sub, pos[0])
	}
	st, err := openDB(ctx, cmd.f)
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "list":
		return listKeys(ctx, st)
	case "delete":
		if err := refuseConfigKey(st, pos[0]); err != nil {
			return err
		}
		if err := st.db.DeleteKey(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Printf("Deleted key %s and its access rules.\n", pos[0])
		return nil
	case "rotate":
		return rotateKey(ctx, st, pos[0], cmd.private)
	}
	rule, err := ruleFromFlags(ctx, st, pos[0], cmd.group, cmd.resources, cmd.users)
	if err != nil {
		return err
	}
	return addKey(ctx, st, pos[0], cmd.private, rule)
}

// refuseConfigKey fails for a key defined in the configuration file, which
// the service treats as immutable.
func refuseConfigKey(st *stores, publicKey string) error {
	for _, k := range st.cfg.API.AccessControl.Keys {
		if k.PublicKey == publicKey {
			return fmt.Errorf("key %s is defined in the configuration file; change it there", publicKey)
		}
	}
	return nil
}

// ruleFromFlags builds the rule `keys add` creates, checked as the API
// checks one (api.ValidateRule); nil when neither --group nor --resources
// is given.
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
	exists := func(ctx context.Context, name string) (bool, error) {
		if _, ok := st.cfg.API.AccessControl.Groups[name]; ok || slices.Contains(api.BuiltinGroups(), name) {
			return true, nil
		}
		_, err := st.db.Group(ctx, name)
		if errors.Is(err, storage.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	if err := api.ValidateRule(ctx, *r, exists); err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) {
			return nil, err
		}
		hint := "built-in groups: " + strings.Join(api.BuiltinGroups(), ", ")
		switch {
		case strings.HasPrefix(ae.Msg, "Illegal value for users"):
			hint = "--users is '*' alone, or names of 1-64 of a-z A-Z 0-9 _ -"
		case group == "":
			hint = "resources: " + strings.Join(api.Resources(), ", ")
		}
		return nil, fmt.Errorf("keys add: %s (%s)", ae.Msg, hint)
	}
	return r, nil
}

func addKey(ctx context.Context, st *stores, publicKey, private string, rule *storage.Rule) error {
	if err := refuseConfigKey(st, publicKey); err != nil {
		return err
	}
	if private == "" {
		private = randomHex(32)
	}
	err := createKey(ctx, st, storage.Key{PublicKey: publicKey, PrivateKey: private}, rule)
	if errors.Is(err, storage.ErrExist) {
		return fmt.Errorf("key %s: %w; use `vitrine keys rotate %s` for a new private key", publicKey, storage.ErrExist, publicKey)
	}
	if err != nil {
		return err
	}
	printKey("Created key "+publicKey, publicKey, private)
	if rule == nil {
		fmt.Fprintf(os.Stderr, "Note: %s has no access rules yet; add one with --group or --resources.\n", publicKey)
	}
	return nil
}

func rotateKey(ctx context.Context, st *stores, publicKey, private string) error {
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
	printKey("New private key for "+publicKey, publicKey, private)
	return nil
}

func printKey(title, publicKey, private string) {
	fmt.Printf("%s (the private key is shown only this once):\n  public key:  %s\n  private key: %s\n",
		title, publicKey, private)
}

// listKeys prints one line per rule, configured keys first; private keys
// are never shown.
func listKeys(ctx context.Context, st *stores) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PUBLIC KEY\tSOURCE\tUSERS\tGRANTS")
	configured := map[string]bool{}
	for _, k := range st.cfg.API.AccessControl.Keys {
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
