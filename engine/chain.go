package engine

import "strings"

// Chain is a parsed and validated transformation chain.
type Chain struct {
	specs []Spec
	steps []Step
}

// Len is the number of steps after preset expansion.
func (c Chain) Len() int { return len(c.steps) }

// Key is a canonical text of the chain, stable across parameter order; the
// variant cache uses it.
func (c Chain) Key() string {
	parts := make([]string, len(c.specs))
	for i, s := range c.specs {
		parts[i] = s.String()
	}
	return strings.Join(parts, "|")
}

// Names returns the transformation names of the chain in order.
func (c Chain) Names() []string {
	out := make([]string, len(c.specs))
	for i, s := range c.specs {
		out[i] = s.Name
	}
	return out
}

// ParseChain expands presets, looks every name up in the registry
// (`Transformation "<name>" not registered`), validates every parameter and
// enforces the chain-length limit; all errors are KindInvalid.
func (e *Engine) ParseChain(ts []string) (Chain, error) {
	return Chain{}, errNotImplemented
}
