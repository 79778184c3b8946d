package api

import "github.com/vitrine/vitrine/engine"

// TransformationList is the body of GET /transformations; clients in Go
// (the admin UI) decode it into this type.
type TransformationList struct {
	Transformations []Transformation `json:"transformations"`
}

// Transformation describes one transformation, native or WASM: its name,
// kind, summary and parameters.
type Transformation = engine.Description

// TransformationParam describes one parameter of a transformation: type,
// bounds, allowed values, default, whether it is required.
type TransformationParam = engine.ParamDesc

// getTransformations serves the machine-readable description of every
// transformation the engine knows, native and WASM, sorted by name. Like
// /status it needs no key: it says what `t[]` accepts, which every client
// may know, and nothing about any user's data.
func (s *Server) getTransformations(c *call) error {
	return c.writeJSON(TransformationList{Transformations: s.engine.Registry().Describe()}, out{cache: cacheNone})
}
