package storage

import (
	"slices"
	"strings"
)

// The event types, io.vitrine.<resource>.<verb>: the one catalogue that
// the outbox writes (eventKinds) and that purges, webhooks and buses read
// (api/outbox/README.md "Events").
const (
	EventImageAdded         = "io.vitrine.image.added"
	EventImageDeleted       = "io.vitrine.image.deleted"
	EventMetadataReplaced   = "io.vitrine.metadata.replaced"
	EventMetadataMerged     = "io.vitrine.metadata.merged"
	EventMetadataDeleted    = "io.vitrine.metadata.deleted"
	EventShortURLCreated    = "io.vitrine.shorturl.created"
	EventShortURLDeleted    = "io.vitrine.shorturl.deleted"
	EventKeyCreated         = "io.vitrine.key.created"
	EventKeyUpdated         = "io.vitrine.key.updated"
	EventKeyDeleted         = "io.vitrine.key.deleted"
	EventRuleCreated        = "io.vitrine.rule.created"
	EventRuleDeleted        = "io.vitrine.rule.deleted"
	EventGroupCreated       = "io.vitrine.group.created"
	EventGroupUpdated       = "io.vitrine.group.updated"
	EventGroupDeleted       = "io.vitrine.group.deleted"
	EventFiltersReloaded    = "io.vitrine.filters.reloaded"
	EventWebhookCreated     = "io.vitrine.webhook.created"
	EventWebhookUpdated     = "io.vitrine.webhook.updated"
	EventWebhookDeleted     = "io.vitrine.webhook.deleted"
	EventUserErased         = "io.vitrine.user.erased"
	EventUploadTokenCreated = "io.vitrine.uploadtoken.created"
	EventUploadTokenRevoked = "io.vitrine.uploadtoken.revoked"
	EventBlocklistAdded     = "io.vitrine.blocklist.added"
	EventBlocklistDeleted   = "io.vitrine.blocklist.deleted"
	EventQuotaUpdated       = "io.vitrine.quota.updated"
	EventFilterDeployed     = "io.vitrine.filter.deployed"
	EventFilterUpdated      = "io.vitrine.filter.updated"
	EventFilterRolledBack   = "io.vitrine.filter.rolledback"
	EventFilterDeleted      = "io.vitrine.filter.deleted"
)

// eventKind is what an audit action becomes as an event: its type, and
// how its audit target names its subject.
type eventKind struct {
	typ   string
	scope eventScope
}

type eventScope int

const (
	imageScope      eventScope = iota // target user/identifier
	keyScope                          // target a public key
	groupScope                        // target a group name
	filterScope                       // target "filters"
	webhookScope                      // target a webhook id
	tokenScope                        // target user/uploadtokens/id
	userScope                         // target a user
	blocklistScope                    // target a blocklist entry's id
	filterNameScope                   // target filters/<name>
)

// eventKinds maps every audit action to its event: one table, so that a
// new action without an event fails its change (ErrInvalid) while events
// are on, instead of going out under a made-up name.
var eventKinds = map[string]eventKind{
	"image.create":    {EventImageAdded, imageScope},
	"image.delete":    {EventImageDeleted, imageScope},
	"metadata.set":    {EventMetadataReplaced, imageScope},
	"metadata.merge":  {EventMetadataMerged, imageScope},
	"metadata.delete": {EventMetadataDeleted, imageScope},
	"shorturl.create": {EventShortURLCreated, imageScope},
	"shorturl.delete": {EventShortURLDeleted, imageScope},
	"key.create":      {EventKeyCreated, keyScope},
	"key.update":      {EventKeyUpdated, keyScope},
	"key.delete":      {EventKeyDeleted, keyScope},
	"rule.create":     {EventRuleCreated, keyScope},
	"rule.delete":     {EventRuleDeleted, keyScope},
	"group.create":    {EventGroupCreated, groupScope},
	"group.update":    {EventGroupUpdated, groupScope},
	"group.delete":    {EventGroupDeleted, groupScope},
	"filters.reload":  {EventFiltersReloaded, filterScope},
	"webhook.create":  {EventWebhookCreated, webhookScope},
	"webhook.update":  {EventWebhookUpdated, webhookScope},
	"webhook.delete":  {EventWebhookDeleted, webhookScope},
	"user.erase":      {EventUserErased, userScope},

	"uploadtoken.create": {EventUploadTokenCreated, tokenScope},
	"uploadtoken.revoke": {EventUploadTokenRevoked, tokenScope},

	"blocklist.add":    {EventBlocklistAdded, blocklistScope},
	"blocklist.delete": {EventBlocklistDeleted, blocklistScope},
	"quota.update":     {EventQuotaUpdated, userScope},

	"filters.put":      {EventFilterDeployed, filterNameScope},
	"filters.patch":    {EventFilterUpdated, filterNameScope},
	"filters.rollback": {EventFilterRolledBack, filterNameScope},
	"filters.delete":   {EventFilterDeleted, filterNameScope},
}

// EventTypes returns every event type a change writes, sorted.
func EventTypes() []string {
	out := make([]string, 0, len(eventKinds))
	for _, k := range eventKinds {
		out = append(out, k.typ)
	}
	slices.Sort(out)
	return out
}

// subject and names return the event's subject and the fields of its
// data that name what changed, from the audit target.
func (k eventKind) subject(target string) (string, map[string]any) {
	switch k.scope {
	case imageScope:
		user, id, _ := strings.Cut(target, "/")
		return ImageSubject(user, id), map[string]any{"user": user, "imageIdentifier": id}
	case keyScope:
		return "keys/" + target, map[string]any{"publicKey": target}
	case groupScope:
		return "groups/" + target, map[string]any{"group": target}
	case webhookScope:
		return "webhooks/" + target, map[string]any{"webhook": target}
	case tokenScope:
		user, rest, _ := strings.Cut(target, "/")
		return "users/" + target, map[string]any{"user": user, "uploadToken": strings.TrimPrefix(rest, "uploadtokens/")}
	case userScope:
		return "users/" + target, map[string]any{"user": target}
	case blocklistScope:
		return "blocklist/" + target, map[string]any{"blocklist": target}
	case filterNameScope:
		return target, map[string]any{"filter": strings.TrimPrefix(target, "filters/")}
	}
	return target, map[string]any{}
}

// ImageSubject is the subject of a change to an image, its metadata or
// its short URLs: users/<user>/images/<image>.
func ImageSubject(user, image string) string { return "users/" + user + "/images/" + image }

// Subject is an event's subject read back: the grammar subject builds.
type Subject struct {
	// User is the user of a subject users/<user>[/...] ("" otherwise);
	// Image the image of users/<user>/images/<image>.
	User, Image string
	// Whole: the subject is users/<user> itself (an erasure, quotas).
	Whole bool
	// PublicKey is the key of keys/<public key> (a key or its rules).
	PublicKey string
}

// ParseSubject reads s as subject writes it; a subject of another shape
// gives the zero Subject.
func ParseSubject(s string) Subject {
	if pk, ok := strings.CutPrefix(s, "keys/"); ok {
		return Subject{PublicKey: pk}
	}
	rest, ok := strings.CutPrefix(s, "users/")
	if !ok {
		return Subject{}
	}
	user, tail, more := strings.Cut(rest, "/")
	if user == "" {
		return Subject{}
	}
	sub := Subject{User: user, Whole: !more}
	if image, ok := strings.CutPrefix(tail, "images/"); ok && image != "" && !strings.Contains(image, "/") {
		sub.Image = image
	}
	return sub
}
