package api

import "sort"

// getTransformations serves the machine-readable description of every
// transformation the engine knows, native and WASM (engine.Description),
// sorted by name, and the configured presets (transformationPresets), each
// a name usable in t[] and the chain it expands to. Like /status it needs
// no key: it says what `t[]` accepts, which every client may know, and
// nothing about any user's data.
func (s *Server) getTransformations(c *call) error {
	type preset struct {
		Name            string   `json:"name"`
		Transformations []string `json:"transformations"`
	}
	presets := []preset{}
	for name, chain := range s.engine.Config().Presets {
		presets = append(presets, preset{Name: name, Transformations: chain})
	}
	sort.Slice(presets, func(i, j int) bool { return presets[i].Name < presets[j].Name })
	return c.writeJSON(map[string]any{"transformations": s.engine.Registry().Describe(), "presets": presets}, out{cache: cacheNone})
}
