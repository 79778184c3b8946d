// Package engine does vitrine's native image work through libvips (govips):
// it sniffs and probes uploads without decoding pixels, parses and validates
// transformation chains (`t[]=name:param=value,...`), runs them with
// shrink-on-load where the chain allows, and encodes the negotiated output
// format. Animated GIF and WebP sources are transformed frame by frame
// (animation.go); outputs carry no EXIF, XMP or IPTC unless configured
// (metadata.go), and colours are converted to sRGB at decode (colour.go).
//
// Every native transformation lives in its own file, declares its parameters
// once (describe: type, bounds, allowed values, default), parses them through
// that declaration into a typed struct (all validation up front, 400-ready
// errors naming the parameter) and registers itself in init(); the same
// declaration is what GET /transformations serves. Custom transformations
// (WebAssembly guests) are not registered: at start-up package main (filters.go) hands the
// registry a Guests source (Registry.SetGuests), which it looks up the names
// it does not hold in; native names always win.
//
// Errors are *Error values of a Kind; each answers the HTTP status and the
// public message a client sees (HTTPStatus, PublicMessage), which api maps
// in one place.
package engine
