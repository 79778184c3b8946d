package api

import (
	"sort"

	"github.com/vitrine/vitrine/engine"
)

// TransformationList is the body of GET /transformations; clients in Go
// (the admin UI) decode it into this type.
type TransformationList struct {
	Transformations []Transformation `json:"transformations"`
	Presets         []Preset         `json:"presets"`
}

// Transformation describes one transformation, native or WASM: its name,
// kind, summary and parameters.
type Transformation = engine.Description

// TransformationParam describes one parameter of a transformation: type,
// bounds, allowed values, default, whether it is required.
type TransformationParam = engine.ParamDesc

// Preset is one configured preset (transformationPresets): a name usable
// in t[] and the chain it expands to.
type Preset struct {
	Name            string   `json:"name"`
	Transformations []string `json:"transformations"`
}

// getTransformations serves the machine-readable description of every
// transformation the engine knows, native and WASM, sorted by name, and the
// configured presets. Like /status it needs no key: it says what `t[]`
// accepts, which every client may know, and nothing about any user's data.
func (s *Server) getTransformations(c *call) error {
	presets := []Preset{}
	for name, chain := range s.engine.Config().Presets {
		presets = append(presets, Preset{Name: name, Transformations: chain})
	}
	sort.Slice(presets, func(i, j int) bool { return presets[i].Name < presets[j].Name })
	return c.writeJSON(TransformationList{Transformations: s.engine.Registry().Describe(), Presets: presets}, out{cache: cacheNone})
}
