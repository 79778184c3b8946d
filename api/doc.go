// Package api serves vitrine's REST interface (described for clients in
// api/openapi.yaml and api/README.md's "The API"): routing,
// content negotiation, access tokens and signed writes, access control, the
// error model, cache headers and the event bus that fires
// `<resource>.<method>` events. It turns errors into HTTP statuses in one
// place (httpError in errors.go): an error of any package that answers
// HTTPStatus and PublicMessage (engine, filters, storage) becomes that
// status and message; its details go to the log only.
package api
