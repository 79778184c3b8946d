package api

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

// Quotas (api/README.md "Quotas"): GET and PUT /users/<user>/quota, resources
// quota.get (in the built-in group read-only) and quota.put (all). What
// counts against them and where they are checked is storage's (quotas.go);
// an upload past one answers the *storage.QuotaError, 403 with service
// error code storage.QuotaErrorCode and a message naming the quota.

// quotaStore reads and changes users' quotas.
type quotaStore interface {
	UserQuota(ctx context.Context, user string) (storage.UserQuota, error)
	SetQuota(ctx context.Context, user string, o storage.QuotaOverride) (storage.UserQuota, error)
	CheckQuota(ctx context.Context, user string, size int64) error
}

var _ quotaStore = (*storage.DB)(nil)

// quotaFields are the JSON names of the quotas, in order.
var quotaFields = []string{"images", "bytes", "variantsPerImage"}

// quotasOf is a set of quotas as the API writes them (0 is unlimited).
func quotasOf(q storage.Quotas) Quotas {
	return Quotas{Images: q.Images, Bytes: q.Bytes, VariantsPerImage: q.VariantsPerImage}
}

// usageOf is what a user stores as the API writes it.
func usageOf(u storage.QuotaUsage) QuotaUsage {
	return QuotaUsage{Images: u.Images, Bytes: u.Bytes, Variants: u.Variants, VariantBytes: u.VariantBytes,
		MaxVariantsPerImage: u.MaxVariantsPerImage, Variations: u.Variations, VariationBytes: u.VariationBytes}
}

// userQuotaOf is the answer of GET and PUT /users/<user>/quota.
func userQuotaOf(q storage.UserQuota) UserQuota {
	v := UserQuota{User: q.User, Quota: quotasOf(q.Limits), Defaults: quotasOf(q.Defaults), Usage: usageOf(q.Usage),
		Override: QuotaOverride{Images: q.Override.Images, Bytes: q.Override.Bytes, VariantsPerImage: q.Override.VariantsPerImage}}
	if !q.Updated.IsZero() {
		d := httpDate(q.Updated)
		v.Updated = &d
	}
	return v
}

// getQuota serves GET /users/<user>/quota, for any user name: a user with
// nothing stored has the defaults and no usage.
func (s *Server) getQuota(c *call) error {
	q, err := s.quotas.UserQuota(c.ctx(), c.params["user"])
	if err != nil {
		return err
	}
	return c.writeJSON(userQuotaOf(q), out{cache: cacheNone})
}

// putQuota serves PUT /users/<user>/quota: the body's quotas become the
// user's own, each a whole number (0 unlimited) or null (the default); a
// quota left out is null, so `{}` gives the user the defaults back.
func (s *Server) putQuota(c *call) error {
	var body map[string]json.RawMessage
	if err := c.readJSON(4<<10, &body); err != nil {
		return err
	}
	if body == nil {
		return errorf(http.StatusBadRequest, "The quota must be a JSON object of %s", strings.Join(quotaFields, ", "))
	}
	for _, name := range slices.Sorted(maps.Keys(body)) {
		if !slices.Contains(quotaFields, name) {
			return errorf(http.StatusBadRequest, "Unknown quota '%s': the quotas are %s", name, strings.Join(quotaFields, ", "))
		}
	}
	var o storage.QuotaOverride
	for _, f := range []struct {
		name string
		dst  **int64
	}{{"images", &o.Images}, {"bytes", &o.Bytes}, {"variantsPerImage", &o.VariantsPerImage}} {
		raw, ok := body[f.name]
		if !ok {
			continue
		}
		v, err := quotaValue(f.name, raw)
		if err != nil {
			return err
		}
		*f.dst = v
	}
	q, err := s.quotas.SetQuota(c.ctx(), c.params["user"], o)
	if err != nil {
		return err
	}
	return c.writeJSON(userQuotaOf(q), out{cache: cacheNone})
}

// quotaValue reads one quota of a PUT body: null, or a whole number from
// 0 up.
func quotaValue(name string, raw json.RawMessage) (*int64, error) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || n < 0 {
		return nil, errorf(http.StatusBadRequest, "Quota '%s' must be a whole number from 0 (unlimited) up, or null for the default; got %s", name, clipText(string(raw), 40))
	}
	return &n, nil
}

// clipText shortens s for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// userQuota fills the quotas and usage of GET /users/<user>.
func (s *Server) userQuota(ctx context.Context, v *User) error {
	q, err := s.quotas.UserQuota(ctx, v.User)
	if err != nil {
		return err
	}
	v.Quota, v.Usage = quotasOf(q.Limits), usageOf(q.Usage)
	return nil
}
