// Package cdn is vitrine's side of a CDN or shared cache in front of it:
// the cache tags its responses carry (Tags), which tags a change purges
// (Tags.PurgeTags, from the change's event), and the purgers that ask a
// cache to drop what carries them: Varnish with the xkey vmod, Fastly
// (purge by surrogate key), Cloudflare (purge by cache tag) and a generic
// HTTP endpoint (Purger, NewPurger).
//
// A tag names what a response shows: the user, the image, the user's
// listing, the key it was read with, and a tag every response carries
// (Tags.All). Tags are written in the headers each cache reads
// (Surrogate-Key, Cache-Tag, xkey by default), so that one vitrine serves
// any of them. api/cdn/README.md, section "CDN", lists the tags, the changes that
// purge them, the purgers' configuration and a Varnish VCL
// (testdata/vitrine.vcl, which the tests run).
//
// Purges are requests to the operator's own cache; the caller decides when
// to send them and retries the ones that fail: a purge is idempotent.
//
// The package imports nothing of vitrine's.
package cdn
