package cdn

import (
	"cmp"
	"encoding/json"

	"github.com/vitrine/vitrine/storage"
)

// eventNames are the fields of an event's data that name what changed.
type eventNames struct {
	User      string `json:"user"`
	Image     string `json:"imageIdentifier"`
	PublicKey string `json:"publicKey"`
}

// PurgeTags returns the tags a change makes stale, from its event: its
// CloudEvents type, subject and data. None for a change no cached response
// shows (a key or a rule created, which only grants) or that no purge
// could make right.
//
//   - An image deleted, its metadata replaced, merged or deleted (which
//     changes what smartSize, drawPois and faces gravity render), a short
//     URL deleted: the image's tag and the listings that show it (the
//     user's, and those across users).
//   - An image added: those listings.
//   - A key's private key changed, the key deleted, one of its rules
//     deleted: what was read with that key (Key). Those are the changes
//     that revoke access to responses a cache holds: each was read with an
//     access token of the key in its URL.
//   - A group changed or deleted: every key whose rules name the group may
//     have lost access, and the event does not say which keys those are,
//     so All.
//   - A user erased: everything of the user, and the listings across
//     users.
//   - A user's quotas changed: the user's listing tag, which GET
//     /users/<user> (quotas and usage) carries.
//
// The types are storage's catalogue (storage.Event*, api/outbox/README.md "Events") and
// the subjects its grammar (storage.ParseSubject): users/<user>/images/<id>
// for an image, its metadata or its short URLs, keys/<public key> for a
// key or its rules, users/<user> for an erasure and for quotas.
//
// When the event does not name what it needs (a subject or data of
// another shape), PurgeTags returns All: a purge too many costs cache
// misses, one too few serves what should be gone.
func (t Tags) PurgeTags(eventType, subject string, data json.RawMessage) []string {
	var names eventNames
	if len(data) > 0 {
		// Why the error is dropped: data of another shape leaves the
		// names empty, which falls back on the subject, then on All.
		_ = json.Unmarshal(data, &names)
	}
	switch eventType {
	case storage.EventImageAdded:
		user, _ := imageSubject(subject, names)
		if user == "" {
			return []string{t.All()}
		}
		return []string{t.Listing(user), t.Listings()}
	case storage.EventImageDeleted, storage.EventMetadataReplaced, storage.EventMetadataMerged,
		storage.EventMetadataDeleted, storage.EventShortURLDeleted:
		user, image := imageSubject(subject, names)
		if user == "" || image == "" {
			return []string{t.All()}
		}
		return []string{t.Image(user, image), t.Listing(user), t.Listings()}
	case storage.EventKeyUpdated, storage.EventKeyDeleted, storage.EventRuleDeleted:
		pk := cmp.Or(storage.ParseSubject(subject).PublicKey, names.PublicKey)
		if pk == "" {
			return []string{t.All()}
		}
		return []string{t.Key(pk)}
	case storage.EventGroupUpdated, storage.EventGroupDeleted:
		return []string{t.All()}
	case storage.EventUserErased, storage.EventQuotaUpdated:
		user := names.User
		if sub := storage.ParseSubject(subject); sub.Whole {
			user = sub.User
		}
		if user == "" {
			return []string{t.All()}
		}
		if eventType == storage.EventQuotaUpdated {
			return []string{t.Listing(user)}
		}
		return []string{t.User(user), t.Listings()}
	}
	return nil
}

// imageSubject reads user and image from a subject users/<user>/images/<id>,
// else from the event's data.
func imageSubject(subject string, names eventNames) (user, image string) {
	if sub := storage.ParseSubject(subject); sub.Image != "" {
		return sub.User, sub.Image
	}
	return names.User, names.Image
}
