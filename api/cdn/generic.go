package cdn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// generic purges through an endpoint of the operator's: `POST <url>` with
// the JSON body `{"tags": [...]}`, the configured headers, and the token,
// when set, as a bearer token. Any 2xx answer is a success.
type generic struct {
	c PurgerConfig
}

func newGeneric(c PurgerConfig) *generic { return &generic{c: c} }

func (g *generic) Name() string { return "http " + redact(g.c.URL) }

func (g *generic) Purge(ctx context.Context, tags []string) error {
	for _, batch := range batches(tags, g.c.Batch) {
		body, err := json.Marshal(map[string][]string{"tags": batch})
		if err != nil {
			return fmt.Errorf("cdn: http: %w", err)
		}
		req, err := http.NewRequest(http.MethodPost, g.c.URL, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("cdn: http: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		if g.c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+g.c.Token)
		}
		if err := send(ctx, g.c, req, nil); err != nil {
			return fmt.Errorf("cdn: http: %w", err)
		}
	}
	return nil
}

var _ Purger = (*generic)(nil)
