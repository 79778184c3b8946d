// Package outbox delivers the events outbox (storage/events.go) to what
// lies outside the service. Today it holds the message buses of
// events.topics: a Bus is one topic that opens its connection when it is
// first needed, counts a publish only once the broker acknowledged it,
// and drops and reopens its connection after any error, so a broker that
// is down or restarted holds back only its own deliveries and the server
// starts without it (api/outbox/README.md, Events).
package outbox
