package cdn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DefaultFastlyURL is the base of Fastly's API.
const DefaultFastlyURL = "https://api.fastly.com"

// fastly purges by surrogate key through Fastly's bulk purge: `POST
// /service/<service>/purge` with the keys in a `Surrogate-Key` header,
// space separated, at most 256 a request, and the API token in
// `Fastly-Key`.
type fastly struct {
	c        PurgerConfig
	endpoint string
}

func newFastly(c PurgerConfig) *fastly {
	base := c.URL
	if base == "" {
		base = DefaultFastlyURL
	}
	return &fastly{c: c, endpoint: strings.TrimRight(base, "/") + "/service/" + url.PathEscape(c.ServiceID) + "/purge"}
}

func (f *fastly) Name() string { return "fastly service " + f.c.ServiceID }

func (f *fastly) Purge(ctx context.Context, tags []string) error {
	for _, batch := range batches(tags, f.c.Batch) {
		req, err := http.NewRequest(http.MethodPost, f.endpoint, nil)
		if err != nil {
			return fmt.Errorf("cdn: fastly: %w", err)
		}
		req.Header.Set("Fastly-Key", f.c.Token)
		req.Header.Set("Surrogate-Key", strings.Join(batch, " "))
		req.Header.Set("Accept", "application/json")
		if err := send(ctx, f.c, req, nil); err != nil {
			return fmt.Errorf("cdn: fastly: %w", err)
		}
	}
	return nil
}

var _ Purger = (*fastly)(nil)
