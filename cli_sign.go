package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

const signUsage = `usage:
  vitrine sign [--public KEY] [--private KEY] [--method GET|HEAD|POST|PUT|PATCH|DELETE] [--headers | --query] URL
GET and HEAD print the URL with its accessToken. POST, PUT, PATCH and DELETE, and HEAD of a
resumable upload (/users/<user>/uploads/<id>, which is signed like a write), print curl arguments
(-H ... URL) carrying the signature; --headers prints the headers one per line instead, --query
the URL with signature and timestamp parameters. Keys default to $VITRINE_PUBLIC_KEY (else the
user in the URL) and $VITRINE_PRIVATE_KEY (else the key stored under --config/--data).
`

// signCommand is `vitrine sign`: it prints what a request needs to pass the
// service's authentication, computed by api.SignRead and api.SignWrite.
func signCommand(ctx context.Context, args []string) error {
	cmd := newCommand("sign", signUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	pub := cmd.String("public", "", "public key (default $VITRINE_PUBLIC_KEY, else the user in the URL)")
	priv := cmd.String("private", "", "private key (default $VITRINE_PRIVATE_KEY, else the one stored under --config/--data)")
	method := cmd.String("method", "GET", "HTTP method of the request")
	headers := cmd.Bool("headers", false, "writes: print the headers one per line (Name: value)")
	query := cmd.Bool("query", false, "writes: print the URL with signature and timestamp parameters")
	pos, err := cmd.parse(args, 1, 1)
	if err != nil {
		return err
	}
	target := pos[0]
	user, err := api.SignURLUser(target)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	publicKey := firstOf(*pub, os.Getenv("VITRINE_PUBLIC_KEY"), user)
	if publicKey == "" {
		return errors.New("sign: no public key: give --public or set VITRINE_PUBLIC_KEY")
	}
	private := firstOf(*priv, os.Getenv("VITRINE_PRIVATE_KEY"))
	if private == "" {
		if private, err = storedPrivateKey(ctx, f, publicKey); err != nil {
			return err
		}
	}
	m := strings.ToUpper(*method)
	switch {
	case m == "GET" || m == "HEAD" && !resumableUpload(target):
		if *headers || *query {
			return errors.New("sign: --headers and --query are for writes; reads carry an accessToken")
		}
		u, err := api.SignRead(target, publicKey, private)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		fmt.Println(u)
		return nil
	case m == "HEAD", m == "POST", m == "PUT", m == "PATCH", m == "DELETE":
	default:
		return fmt.Errorf("sign: unsupported method %q", *method)
	}
	if *headers && *query {
		return errors.New("sign: give --headers or --query, not both")
	}
	if *query {
		u, err := api.SignWriteQuery(m, target, publicKey, private, time.Now())
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		fmt.Println(u)
		return nil
	}
	s, err := api.SignWrite(m, target, publicKey, private, time.Now())
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	for _, h := range s.Headers() {
		if *headers {
			fmt.Printf("%s: %s\n", h.Name, h.Value)
		} else {
			// Why no space after the colon: the line is meant for an unquoted
			// $(...), where a space would split the argument.
			fmt.Printf("-H %s:%s ", h.Name, h.Value)
		}
	}
	if !*headers {
		fmt.Println(s.URL)
	}
	return nil
}

// resumableUpload reports whether target is a resumable upload's URL
// (/users/<user>/uploads/<id>), whose every request is signed as a write.
func resumableUpload(target string) bool {
	u, err := url.Parse(target)
	if err != nil {
		return false
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	return len(segs) == 4 && segs[0] == "users" && segs[2] == "uploads"
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
	for _, k := range st.cfg.API.AccessControl.Keys {
		if k.PublicKey == publicKey {
			return k.PrivateKey, nil
		}
	}
	k, err := st.db.Key(ctx, publicKey)
	if errors.Is(err, storage.ErrNotExist) {
		// Why not %w: storage's text repeats the key, and this sentence
		// already says all of it.
		return "", fmt.Errorf("sign: no key %s in the configuration file or the database of %s; "+
			"give --private or set VITRINE_PRIVATE_KEY", publicKey, storage.RedactURL(st.cfg.Database))
	}
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return k.PrivateKey, nil
}
