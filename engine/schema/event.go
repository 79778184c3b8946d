package schema

import "strings"

// MatchEvent reports whether pattern selects the event name
// (`<resource>.<method>`): the pattern is the name itself, `resource.*`
// (every method of a resource), `*.method` (a method of every resource) or
// `*` (everything). The api's event bus dispatches by it, and the filters
// check a listener's manifest with it.
func MatchEvent(pattern, name string) bool {
	if pattern == "*" || pattern == name {
		return true
	}
	if resource, ok := strings.CutSuffix(pattern, ".*"); ok {
		return strings.HasPrefix(name, resource+".")
	}
	if method, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(name, "."+method)
	}
	return false
}
