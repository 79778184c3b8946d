// Package outbound is the one guard every connection vitrine makes on a
// user's behalf goes through (webhooks, URL ingestion, CDN purges): a
// Guard resolves a host through its Resolver, checks every address the name
// resolves to against the ranges no such connection may reach (loopback,
// private, link-local, shared, multicast, reserved, cloud metadata, and their
// IPv4-mapped and NAT64 forms), and dials the address it checked, never the
// name again, so that a name rebound between the check and the connection
// reaches nothing new. Its HTTP client follows no redirect (a 3xx comes back
// as it is) and caps the time of an exchange and the size of a response.
//
// The operator's allowlist (Config.Allow, the configuration key
// `outbound.allow`) opens exactly the ranges and host names it lists.
// Refusals are errors that match ErrRefused; responses over the size cap
// fail with ErrTooLarge. The ranges, and why documentation ranges are
// refused too, are listed in api/outbound/README.md.
//
// The package imports nothing of vitrine's.
package outbound
