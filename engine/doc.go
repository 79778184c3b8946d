// Package engine does vitrine's native image work through libvips (govips):
// it sniffs and probes uploads without decoding pixels, parses and validates
// transformation chains (`t[]=name:param=value,...`), runs them with
// shrink-on-load where the chain allows, and encodes the negotiated output
// format. Animated GIF and WebP sources are transformed frame by frame
// (animation.go); outputs carry no EXIF, XMP or IPTC unless configured
// (metadata.go), and colours are converted to sRGB at decode (colour.go).
//
// Every transformation lives in its own file, parses its own parameters into a
// typed struct (all validation up front, 400-ready errors naming the parameter)
// and registers itself in init(). Custom transformations (WebAssembly guests)
// are added to an Engine's registry at start-up through Register.
package engine
