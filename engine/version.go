package engine

import "github.com/davidbyttow/govips/v2/vips"

// LibvipsVersion returns the version of the libvips library the engine is
// linked against (x.y.z). It needs no Startup.
func LibvipsVersion() string { return vips.Version }
