// Package schema holds the few facts that the engine, the filters and the
// api must agree on, each defined once: a transformation's parameter schema
// (Param), the colour syntax (ParseColor), event-name patterns
// (MatchEvent) and how a bad parameter value is explained (RunOn). It imports only the standard library, so that package
// filters, which must stay free of cgo and govips, may import it beside
// engine and api; web reaches it through api.
package schema
