// Package cdntest runs the caches that api/cdn purges, for tests: Varnish
// with the xkey vmod and the VCL that api/cdn/README.md shows, started by the test
// itself.
package cdntest
