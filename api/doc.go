// Package api serves vitrine's REST interface (../shared/spec/SPEC.md): routing,
// content negotiation, access tokens and signed writes, access control, the
// error model, cache headers and the event bus that fires
// `<resource>.<method>` events. It turns engine and storage errors into HTTP
// statuses in one place (errors.go).
package api
