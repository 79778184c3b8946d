package api

// getTransformations serves the machine-readable description of every
// transformation the engine knows, native and WASM (engine.Description),
// sorted by name. Like /status it needs no key: it says what `t[]` accepts,
// which every client may know, and nothing about any user's data.
func (s *Server) getTransformations(c *call) error {
	return c.writeJSON(map[string]any{"transformations": s.engine.Registry().Describe()}, out{cache: cacheNone})
}
