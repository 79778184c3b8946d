// Package api serves vitrine's REST interface, described route by route in
// openapi.yaml (served at GET /openapi.json): routing, content negotiation,
// access tokens and signed writes, access control, the error model, cache
// headers and the event bus that fires `<resource>.<method>` events. It turns engine and storage errors into HTTP
// statuses in one place (errors.go).
package api
