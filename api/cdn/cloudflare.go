package cdn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DefaultCloudflareURL is the base of Cloudflare's API.
const DefaultCloudflareURL = "https://api.cloudflare.com/client/v4"

// cloudflare purges by cache tag through Cloudflare's purge API: `POST
// /zones/<zone>/purge_cache` with the JSON body `{"tags": [...]}` and the
// API token as a bearer token. Its answer is a JSON envelope whose
// `success` must be true.
type cloudflare struct {
	c        PurgerConfig
	endpoint string
}

func newCloudflare(c PurgerConfig) *cloudflare {
	base := c.URL
	if base == "" {
		base = DefaultCloudflareURL
	}
	return &cloudflare{c: c, endpoint: strings.TrimRight(base, "/") + "/zones/" + url.PathEscape(c.ZoneID) + "/purge_cache"}
}

func (f *cloudflare) Name() string { return "cloudflare zone " + f.c.ZoneID }

func (f *cloudflare) Purge(ctx context.Context, tags []string) error {
	for _, batch := range batches(tags, f.c.Batch) {
		body, err := json.Marshal(map[string][]string{"tags": batch})
		if err != nil {
			return fmt.Errorf("cdn: cloudflare: %w", err)
		}
		req, err := http.NewRequest(http.MethodPost, f.endpoint, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("cdn: cloudflare: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+f.c.Token)
		req.Header.Set("Content-Type", "application/json")
		if err := send(ctx, f.c, req, cloudflareSuccess); err != nil {
			return fmt.Errorf("cdn: cloudflare: %w", err)
		}
	}
	return nil
}

// cloudflareSuccess checks the envelope of a 2xx answer: `success` false
// is a failure whatever the status said.
func cloudflareSuccess(body []byte) error {
	var env struct {
		Success *bool `json:"success"`
	}
	if json.Unmarshal(body, &env) == nil && env.Success != nil && !*env.Success {
		return errors.New("success is false")
	}
	return nil
}

var _ Purger = (*cloudflare)(nil)
