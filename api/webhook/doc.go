// Package webhook sends events to webhook receivers the way the Standard
// Webhooks specification says (https://www.standardwebhooks.com), so that a
// receiver verifies them with the libraries that already exist: each
// request carries webhook-id (the event's id, the same on every
// redelivery), webhook-timestamp (unix seconds of the attempt) and
// webhook-signature ("v1," and the base64 HMAC-SHA256, under the secret's
// bytes, of id.timestamp.body); a secret is "whsec_" and base64. The body
// is the event as a CloudEvent in structured mode. api/outbox/README.md "Webhooks" is
// the user's description.
//
// Sending goes through the caller's HTTP client, which for vitrine is the
// outbound guard's (api/outbound): the package imports nothing of
// vitrine's.
package webhook
