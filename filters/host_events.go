package filters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
)

// The host functions of listeners (ABI.md section 5, "Events", "Metadata"
// and stats_set) and the buffering of their changes until the call
// succeeds.

func (h *host) eventGet(ctx context.Context, m api.Module, buf, bufLen uint32) int32 {
	c := listener(ctx)
	if c == nil {
		return errUnavailable
	}
	return copyOut(m, buf, bufLen, c.eventJSON)
}

// eventObject is the event object of ABI.md section 5 ("Events"), which
// event_get copies. Why before the call rather than on the guest's first
// event_get: event_get works in every event, so the service's failure to
// describe the event (an upload that is not an image) must end the
// request before the guest runs, not surface as ERR_UNAVAILABLE in a guest
// that cannot do without its event.
func eventObject(ctx context.Context, ev Event) ([]byte, error) {
	obj := map[string]any{
		"event": ev.EventName(), "user": ev.User(), "publicKey": ev.PublicKey(),
		"imageIdentifier": ev.ImageIdentifier(),
	}
	info, err := ev.ImageInfo(ctx)
	if err != nil {
		return nil, err
	}
	if info != nil {
		obj["image"] = info
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("filters: event %s: %w", ev.EventName(), err)
	}
	return b, nil
}

// upload returns the running call when it is a listener's on images.post.
func upload(ctx context.Context) *call {
	if c := listener(ctx); c != nil && c.event.EventName() == eventUpload {
		return c
	}
	return nil
}

func (h *host) bodyRead(ctx context.Context, m api.Module, buf, bufLen uint32) int32 {
	c := upload(ctx)
	if c == nil {
		return errUnavailable
	}
	body := c.body
	var err error
	if body == nil {
		body, err = c.event.Body(ctx)
	}
	if err != nil {
		return c.serviceFailed(err)
	}
	return copyOut(m, buf, bufLen, body)
}

func (h *host) bodyWrite(ctx context.Context, m api.Module, ptr, n uint32) int32 {
	c := upload(ctx)
	if c == nil {
		return errUnavailable
	}
	b, ok := read(m, ptr, n)
	if !ok {
		return errFault
	}
	// Why before the copy: the guest's memory may hold far more than any
	// upload may be.
	if int64(len(b)) > c.event.MaxBodyBytes() {
		h.log.Info("filter body_write refused", "filter", h.name, "err", "larger than the upload limit")
		return errLimit
	}
	body := append([]byte(nil), b...)
	if err := c.event.CheckBody(ctx, body); err != nil {
		h.log.Info("filter body_write refused", "filter", h.name, "err", err)
		return codeOf(err)
	}
	c.body = body
	return 0
}

// codeOf maps an error of the service to ERR_LIMIT (413) or ERR_INVALID.
func codeOf(err error) int32 {
	var st interface{ HTTPStatus() int }
	if errors.As(err, &st) && st.HTTPStatus() == 413 {
		return errLimit
	}
	return errInvalid
}

func (h *host) metadataGet(ctx context.Context, m api.Module, buf, bufLen uint32) int32 {
	c := callOf(ctx)
	if c == nil {
		return errUnavailable
	}
	md := c.metadata
	if c.event != nil {
		var err error
		if md, err = c.pendingMetadata(ctx); err != nil {
			return c.serviceFailed(err)
		}
		if md == nil {
			return errNotFound
		}
	}
	if md == nil {
		md = map[string]any{}
	}
	b, err := json.Marshal(md)
	if err != nil {
		return errInvalid
	}
	return copyOut(m, buf, bufLen, b)
}

func (h *host) metadataSet(ctx context.Context, m api.Module, ptr, n uint32) int32 {
	c := listener(ctx)
	if c == nil {
		return errUnavailable
	}
	switch c.event.EventName() {
	case eventUpload, eventMetadataPut, eventMetadataPost:
	default:
		return errUnavailable
	}
	b, ok := read(m, ptr, n)
	if !ok {
		return errFault
	}
	// Why utf8.Valid: encoding/json accepts invalid UTF-8 in strings (and
	// stores U+FFFD in its place), where ABI.md section 5 says all text is
	// UTF-8.
	var md map[string]any
	if !utf8.Valid(b) || !json.Valid(b) || json.Unmarshal(b, &md) != nil || md == nil {
		return errInvalid
	}
	// Why the merged document: an upload's tags add to its metadata (and
	// to this call's earlier ones), and the limits apply to what the image
	// gets, not to each part.
	cand := md
	if c.event.EventName() == eventUpload {
		cur, err := c.pendingMetadata(ctx)
		if err != nil {
			return codeOf(err)
		}
		cand = make(map[string]any, len(cur)+len(md))
		for k, v := range cur {
			cand[k] = v
		}
		for k, v := range md {
			cand[k] = v
		}
	}
	if err := c.event.CheckMetadata(cand); err != nil {
		h.log.Info("filter metadata_set refused", "filter", h.name, "err", err)
		return codeOf(err)
	}
	if c.md != nil && c.event.EventName() == eventUpload {
		for k, v := range md {
			c.md[k] = v
		}
	} else {
		c.md = md
	}
	c.mdSet = true
	return 0
}

func (h *host) statsSet(ctx context.Context, m api.Module, namePtr, nameLen, ptr, n uint32) int32 {
	c := listener(ctx)
	if c == nil || c.event.EventName() != eventStats {
		return errUnavailable
	}
	name, code := text(m, namePtr, nameLen)
	if code != 0 {
		return code
	}
	b, ok := read(m, ptr, n)
	if !ok {
		return errFault
	}
	if !statName.MatchString(name) {
		return errInvalid
	}
	// Why before parsing: the guest's memory may hold far more than a value
	// may be.
	if len(b) > maxStatValueBytes {
		return errLimit
	}
	if !utf8.Valid(b) {
		return errInvalid
	}
	// The value as GET /stats writes it: compact, with <, > and & escaped.
	// Its length is what the limits count, and its numbers stay exact.
	v, err := json.Marshal(json.RawMessage(b))
	if err != nil {
		return errInvalid
	}
	old, replaced := c.stats[name]
	switch {
	case len(v) > maxStatValueBytes:
		return errLimit
	case !replaced && len(c.stats) >= maxStatNames:
		return errLimit
	case c.statBytes-len(old)+len(v) > maxStatBytes:
		return errLimit
	}
	if c.stats == nil {
		c.stats = map[string]json.RawMessage{}
	}
	c.stats[name] = v
	c.statBytes += len(v) - len(old)
	return 0
}

// pendingMetadata is what metadata_get answers in a listener: the event's
// metadata with this call's own metadata_set applied.
func (c *call) pendingMetadata(ctx context.Context) (map[string]any, error) {
	md, err := c.event.Metadata(ctx)
	if err != nil || !c.mdSet {
		return md, err
	}
	if c.event.EventName() != eventUpload {
		return c.md, nil
	}
	merged := make(map[string]any, len(md)+len(c.md))
	for k, v := range md {
		merged[k] = v
	}
	for k, v := range c.md {
		merged[k] = v
	}
	return merged, nil
}

// commit applies a successful listener call's changes to its event; the
// stats_set values go under the name of the filter that made the call.
func (c *call) commit(filter string) {
	if c.body != nil {
		c.event.SetBody(c.body)
	}
	if c.mdSet {
		c.event.SetMetadata(c.md)
	}
	for k, v := range c.stats {
		c.event.SetStat(filter, k, v)
	}
}
