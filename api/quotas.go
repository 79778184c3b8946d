package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/storage"
)

// Quotas (README "Quotas"): GET and PUT /users/<user>/quota, resources
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

// quotasJSON is a set of quotas as the API writes them (0 is unlimited).
func quotasJSON(q storage.Quotas) map[string]int64 {
	return map[string]int64{"images": q.Images, "bytes": q.Bytes, "variantsPerImage": q.VariantsPerImage}
}

// usageJSON is what a user stores: images and bytes count against the
// quotas, variants and variations are shown beside them.
func usageJSON(u storage.QuotaUsage) map[string]int64 {
	return map[string]int64{"images": u.Images, "bytes": u.Bytes,
		"variants": u.Variants, "variantBytes": u.VariantBytes, "maxVariantsPerImage": u.MaxVariantsPerImage,
		"variations": u.Variations, "variationBytes": u.VariationBytes}
}

// quotaJSON is the answer of GET and PUT /users/<user>/quota: the quotas
// in force, the user's own (null where the default holds), the defaults
// and the usage.
func quotaJSON(q storage.UserQuota) map[string]any {
	override := map[string]*int64{"images": q.Override.Images, "bytes": q.Override.Bytes,
		"variantsPerImage": q.Override.VariantsPerImage}
	var updated any
	if !q.Updated.IsZero() {
		updated = httpDate(q.Updated)
	}
	return map[string]any{"user": q.User, "quota": quotasJSON(q.Limits), "override": override,
		"defaults": quotasJSON(q.Defaults), "updated": updated, "usage": usageJSON(q.Usage)}
}

// getQuota serves GET /users/<user>/quota, for any user name: a user with
// nothing stored has the defaults and no usage.
func (s *Server) getQuota(c *call) error {
	q, err := s.quotas.UserQuota(c.ctx(), c.params["user"])
	if err != nil {
		return err
	}
	return c.writeJSON(quotaJSON(q), out{cache: cacheNone})
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
	var o storage.QuotaOverride
	for name, raw := range body {
		var dst **int64
		switch name {
		case "images":
			dst = &o.Images
		case "bytes":
			dst = &o.Bytes
		case "variantsPerImage":
			dst = &o.VariantsPerImage
		default:
			return errorf(http.StatusBadRequest, "Unknown quota '%s': the quotas are %s", name, strings.Join(quotaFields, ", "))
		}
		v, err := quotaValue(name, raw)
		if err != nil {
			return err
		}
		*dst = v
	}
	q, err := s.quotas.SetQuota(c.ctx(), c.params["user"], o)
	if err != nil {
		return err
	}
	return c.writeJSON(quotaJSON(q), out{cache: cacheNone})
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

// userQuotaFields adds the user's quotas and usage to GET /users/<user>.
func (s *Server) userQuotaFields(ctx context.Context, user string, v map[string]any) error {
	q, err := s.quotas.UserQuota(ctx, user)
	if err != nil {
		return err
	}
	v["quota"], v["usage"] = quotasJSON(q.Limits), usageJSON(q.Usage)
	return nil
}

// checkQuota refuses an upload that its user's quotas leave no room for,
// before its blob is written (storage checks again when it commits).
func (s *Server) checkQuota(ctx context.Context, img *storage.Image) error {
	return s.quotas.CheckQuota(ctx, img.User, img.Size)
}
