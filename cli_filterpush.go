package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

const filterPushUsage = `usage:
  vitrine filter push DIR [--url URL] [--public KEY] [--private KEY] [--name NAME] [--activate=false]
  vitrine filter rollback NAME [VERSION] [--url URL] [--public KEY] [--private KEY]
push sends DIR's filter.json and filter.wasm to PUT /filters/<name> (name: the manifest's, or
--name); the server compiles the version as a reload would and, unless --activate=false, makes it
the version every instance serves. rollback makes VERSION (a full version or a prefix of 7 or more
digits; default the previous one) the active version again. The server is --url, else $VITRINE_URL;
keys are as vitrine sign takes them: --public, else $VITRINE_PUBLIC_KEY; --private, else
$VITRINE_PRIVATE_KEY, else the key stored under --config/--data.
`

// filterRemote is `vitrine filter push` and `vitrine filter rollback`:
// signed writes to a running server (README, Filters through the API).
func filterRemote(ctx context.Context, sub string, args []string) error {
	cmd := newCommand("filter "+sub, filterPushUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	server := cmd.String("url", "", "the server's base URL (default $VITRINE_URL)")
	pub := cmd.String("public", "", "public key (default $VITRINE_PUBLIC_KEY)")
	priv := cmd.String("private", "", "private key (default $VITRINE_PRIVATE_KEY, else the one stored under --config/--data)")
	name := cmd.String("name", "", "push: the filter's name (default the manifest's)")
	activate := cmd.Bool("activate", true, "push: make the version active at once")
	min, max := 1, 1
	if sub == "rollback" {
		max = 2
	}
	pos, err := cmd.parse(args, min, max)
	if err != nil {
		return err
	}
	base := strings.TrimRight(firstOf(*server, os.Getenv("VITRINE_URL")), "/")
	if base == "" {
		return cmd.errorf("filter %s: no server: give --url or set VITRINE_URL", sub)
	}
	publicKey := firstOf(*pub, os.Getenv("VITRINE_PUBLIC_KEY"))
	if publicKey == "" {
		return cmd.errorf("filter %s: no public key: give --public or set VITRINE_PUBLIC_KEY", sub)
	}
	private := firstOf(*priv, os.Getenv("VITRINE_PRIVATE_KEY"))
	if private == "" {
		if private, err = storedPrivateKey(ctx, f, publicKey); err != nil {
			return err
		}
	}
	c := remote{base: base, public: publicKey, private: private}
	if sub == "rollback" {
		body := []byte{}
		if len(pos) == 2 {
			body, _ = json.Marshal(map[string]string{"version": pos[1]})
		}
		var res api.DeployedFilter
		if err := c.send(ctx, http.MethodPost, "/filters/"+pos[0]+"/rollback", "application/json", body, &res); err != nil {
			return fmt.Errorf("filter rollback: %w", err)
		}
		fmt.Printf("rolled back: %s now serves %s (was %s)\n", res.Name, res.Version, res.Previous)
		return nil
	}
	manifest, err := os.ReadFile(filepath.Join(pos[0], "filter.json"))
	if err != nil {
		return fmt.Errorf("filter push: %w", err)
	}
	wasm, err := os.ReadFile(filepath.Join(pos[0], "filter.wasm"))
	if err != nil {
		return fmt.Errorf("filter push: %w", err)
	}
	if *name == "" {
		var m struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(manifest, &m); err != nil || m.Name == "" {
			return fmt.Errorf("filter push: %s: no name in filter.json; give --name", filepath.Join(pos[0], "filter.json"))
		}
		*name = m.Name
	}
	path := "/filters/" + *name
	if !*activate {
		path += "?activate=false"
	}
	var res api.DeployedFilter
	if err := c.send(ctx, http.MethodPut, path, "application/x-tar", api.FilterBundleTar(manifest, wasm), &res); err != nil {
		return fmt.Errorf("filter push: %w", err)
	}
	if *activate {
		fmt.Printf("pushed %s: version %s is active (%d versions)\n", res.Name, res.Version, len(res.Versions))
	} else {
		fmt.Printf("pushed %s: %d versions, active %s\n", res.Name, len(res.Versions), cmpOr(res.Version, "none"))
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// remote sends signed writes to a server.
type remote struct{ base, public, private string }

// send signs and sends one write and decodes its JSON answer into out; an
// error status comes back as an error with the server's message.
func (r remote) send(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	s, err := api.SignWrite(method, r.base+path, r.public, r.private, time.Now())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	for _, h := range s.Headers() {
		req.Header.Set(h.Name, h.Value)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, e.Error.Message)
		}
		return fmt.Errorf("%s %s: %s", method, path, res.Status)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errors.New("the server's answer is not JSON: " + err.Error())
	}
	return nil
}
