package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"vitrine/storage"
)

// runSign is `vitrine sign`.
func runSign(args []string) error { return quietHelp(osCLI().sign(context.Background(), args)) }

const signUsage = `usage:
  vitrine sign [--public KEY] [--private KEY] [--method GET|HEAD|POST|PUT|DELETE] [--headers | --query] URL
GET and HEAD print the URL with its accessToken. POST, PUT and DELETE print curl arguments
(-H ... URL) carrying the signature; --headers prints the headers one per line instead, --query
the URL with signature and timestamp parameters. Keys default to $VITRINE_PUBLIC_KEY (else the
user in the URL) and $VITRINE_PRIVATE_KEY (else the key stored under --config/--data).
`

// sign prints what a request needs to pass the service's authentication,
// computed exactly as api/auth.go checks it.
func (c *cli) sign(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() { fmt.Fprint(c.stderr, signUsage); fs.PrintDefaults() }
	var f commonFlags
	f.register(fs)
	pub := fs.String("public", "", "public key (default $VITRINE_PUBLIC_KEY, else the user in the URL)")
	priv := fs.String("private", "", "private key (default $VITRINE_PRIVATE_KEY, else the one stored under --config/--data)")
	method := fs.String("method", "GET", "HTTP method of the request")
	headers := fs.Bool("headers", false, "writes: print the headers one per line (Name: value)")
	query := fs.Bool("query", false, "writes: print the URL with signature and timestamp parameters")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("sign: want one URL")
	}
	t, err := parseTarget(pos[0])
	if err != nil {
		return err
	}
	publicKey := firstOf(*pub, c.getenv("VITRINE_PUBLIC_KEY"), t.user)
	if publicKey == "" {
		return errors.New("sign: no public key: give --public or set VITRINE_PUBLIC_KEY")
	}
	private := firstOf(*priv, c.getenv("VITRINE_PRIVATE_KEY"))
	if private == "" {
		if private, err = storedPrivateKey(ctx, f, publicKey); err != nil {
			return err
		}
	}
	m := strings.ToUpper(*method)
	switch m {
	case "GET", "HEAD":
		if *headers || *query {
			return errors.New("sign: --headers and --query are for writes; reads carry an accessToken")
		}
		if t, err = t.withPublicKey(publicKey); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, t.appendParam("accessToken", hmacHex(private, t.signed())))
		return nil
	case "POST", "PUT", "DELETE":
	default:
		return fmt.Errorf("sign: unsupported method %q", *method)
	}
	if *headers && *query {
		return errors.New("sign: give --headers or --query, not both")
	}
	ts := c.now().UTC().Format("2006-01-02T15:04:05Z")
	if *query {
		if t, err = t.withPublicKey(publicKey); err != nil {
			return err
		}
		sig := hmacHex(private, m+"|"+t.signed()+"|"+publicKey+"|"+ts)
		fmt.Fprintln(c.stdout, t.appendParam("signature", sig)+"&timestamp="+url.QueryEscape(ts))
		return nil
	}
	sig := hmacHex(private, m+"|"+t.signed()+"|"+publicKey+"|"+ts)
	hs := [][2]string{{"X-Service-PublicKey", publicKey}, {"X-Service-Authenticate-Timestamp", ts},
		{"X-Service-Authenticate-Signature", sig}}
	for _, h := range hs {
		if *headers {
			fmt.Fprintf(c.stdout, "%s: %s\n", h[0], h[1])
		} else {
			// Why no space after the colon: the line is meant for an unquoted
			// $(...), where a space would split the argument.
			fmt.Fprintf(c.stdout, "-H %s:%s ", h[0], h[1])
		}
	}
	if !*headers {
		fmt.Fprintln(c.stdout, t.raw)
	}
	return nil
}

// target is a request URL as given, with what signing needs from it.
type target struct {
	raw  string
	u    *url.URL
	user string // the <user> of /users/<user>/..., "" when the path has none
}

var userPath = regexp.MustCompile(`^/users/([^/.]+)`)

func parseTarget(raw string) (*target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sign: want an absolute http:// or https:// URL, got %q", raw)
	}
	if strings.Contains(raw, "#") {
		return nil, fmt.Errorf("sign: %q has a fragment, which is never sent", raw)
	}
	if u.Query().Has("accessToken") || u.Query().Has("signature") {
		return nil, fmt.Errorf("sign: %q is signed already", raw)
	}
	t := &target{raw: raw, u: u}
	if m := userPath.FindStringSubmatch(u.Path); m != nil {
		t.user = m[1]
	}
	return t, nil
}

// signed is the URL the service rebuilds to check a signature: scheme and
// host (without a default port, which curl leaves out of Host), the path and
// the query URL-decoded (`+` is a space), without trailing `?` or `&`.
func (t *target) signed() string {
	host := t.u.Host
	if p := t.u.Port(); (t.u.Scheme == "http" && p == "80") || (t.u.Scheme == "https" && p == "443") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	path := t.u.Path
	if path == "" {
		path = "/"
	}
	s := t.u.Scheme + "://" + host + path
	if q := t.u.RawQuery; q != "" {
		if d, err := url.QueryUnescape(q); err == nil {
			q = d
		} else {
			q = strings.ReplaceAll(q, "+", " ")
		}
		s += "?" + q
	}
	return strings.TrimRight(s, "&?")
}

// withPublicKey adds `publicKey` to the query when the key is not named
// like the path user, which is how the service learns it without a header.
func (t *target) withPublicKey(publicKey string) (*target, error) {
	switch q := t.u.Query().Get("publicKey"); {
	case q == publicKey:
		return t, nil
	case q != "":
		return nil, fmt.Errorf("sign: the URL names publicKey %q, not %q", q, publicKey)
	case publicKey == t.user:
		return t, nil
	}
	return parseTarget(t.appendParam("publicKey", publicKey))
}

// appendParam returns the raw URL with one more query parameter.
func (t *target) appendParam(name, value string) string {
	sep := "&"
	switch {
	case !strings.Contains(t.raw, "?"):
		sep = "?"
	case strings.HasSuffix(t.raw, "?") || strings.HasSuffix(t.raw, "&"):
		sep = ""
	}
	return t.raw + sep + name + "=" + url.QueryEscape(value)
}

// storedPrivateKey finds a private key in the configuration file or the
// database, the way the service does.
func storedPrivateKey(ctx context.Context, f commonFlags, publicKey string) (string, error) {
	if f.config == "" {
		// Why: opening a missing data directory would create an empty store
		// (and a new secret) as a side effect of a typo.
		if _, err := os.Stat(f.data); err != nil {
			return "", fmt.Errorf("sign: no private key for %s: give --private, set VITRINE_PRIVATE_KEY, "+
				"or point --data or --config at the service's store", publicKey)
		}
	}
	st, err := openDB(ctx, f)
	if err != nil {
		return "", err
	}
	defer st.Close()
	for _, k := range st.cfg.AccessControl.Keys {
		if k.PublicKey == publicKey {
			return k.PrivateKey, nil
		}
	}
	k, err := st.db.Key(ctx, publicKey)
	if errors.Is(err, storage.ErrNotExist) {
		return "", fmt.Errorf("sign: key %s is neither in the configuration nor in the database: %w", publicKey, err)
	}
	return k.PrivateKey, err
}

// hmacHex is lower-case hex HMAC-SHA256, the service's signature.
func hmacHex(key, data string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
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
