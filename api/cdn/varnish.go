package cdn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// varnish purges Varnish servers through the xkey vmod: a PURGE request
// to each server with the header `xkey-purge: <tags, space separated>`,
// which the VCL in api/cdn/README.md ("CDN") answers with xkey.purge. That VCL
// answers 200 even when no object carried the tags, so that a purge of
// what was never cached is no error to retry.
type varnish struct {
	c    PurgerConfig
	urls []string
}

func newVarnish(c PurgerConfig) *varnish {
	v := &varnish{c: c}
	if c.URL != "" {
		v.urls = append(v.urls, c.URL)
	}
	v.urls = append(v.urls, c.URLs...)
	return v
}

func (v *varnish) Name() string {
	names := make([]string, len(v.urls))
	for i, u := range v.urls {
		names[i] = redact(u)
	}
	return "varnish " + strings.Join(names, ", ")
}

// Purge sends every batch to every server, and goes on past a server that
// fails, so that one down server does not keep the others stale.
func (v *varnish) Purge(ctx context.Context, tags []string) error {
	var errs []error
	for _, batch := range batches(tags, v.c.Batch) {
		for _, u := range v.urls {
			req, err := http.NewRequest("PURGE", u, nil)
			if err != nil {
				return fmt.Errorf("cdn: varnish: %w", err)
			}
			req.Header.Set("xkey-purge", strings.Join(batch, " "))
			if err := send(ctx, v.c, req, nil); err != nil {
				errs = append(errs, fmt.Errorf("cdn: varnish: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

var _ Purger = (*varnish)(nil)
