package engine

import (
	"errors"
	"sort"
	"strings"
)

// Chain is a parsed and validated transformation chain.
type Chain struct {
	specs []Spec
	steps []Step
	hints HintsUsed
}

// HintsUsed says which client hints ParseChainHints applied.
func (c Chain) HintsUsed() HintsUsed { return c.hints }

// Len is the number of steps after preset expansion.
func (c Chain) Len() int { return len(c.steps) }

// Key is a canonical text of the chain, stable across parameter order; the
// variant cache uses it. A guest step contributes its normalised parameters
// and its content hash.
func (c Chain) Key() string {
	parts := make([]string, len(c.specs))
	for i, s := range c.specs {
		parts[i] = s.String()
		if g, ok := c.steps[i].(*guestStep); ok {
			parts[i] = g.key()
		}
	}
	return strings.Join(parts, "|")
}

// NeedsMetadata reports whether a step reads the image's metadata
// (Env.Metadata): smartSize and drawPois read its points of interest, guest
// transformations get it. A caller may skip looking it up otherwise.
func (c Chain) NeedsMetadata() bool {
	for _, st := range c.steps {
		if _, ok := st.(interface{ readsMetadata() }); ok {
			return true
		}
	}
	return false
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
	return e.ParseChainHints(ts, Hints{})
}

// ParseChainHints is ParseChain with the client's hints: sizing steps take
// a dpr parameter, and resize and maxSize width=auto (hints.go).
// Chain.HintsUsed says which hints the chain read.
func (e *Engine) ParseChainHints(ts []string, h Hints) (Chain, error) {
	var (
		specs []Spec
		// from records, for specs expanded from a preset, the request
		// parameters given on the preset name; origin the index in ts.
		from   []map[string]string
		origin []int
	)
	for i, t := range ts {
		sp := ParseSpec(t)
		preset, ok := e.cfg.Presets[sp.Name]
		if !ok {
			specs = append(specs, sp)
			from = append(from, nil)
			origin = append(origin, i)
			continue
		}
		for _, ptxt := range preset {
			ps := ParseSpec(ptxt)
			merged := make(map[string]string, len(sp.Params)+len(ps.Params))
			for k, v := range sp.Params {
				merged[k] = v
			}
			for k, v := range ps.Params { // preset parameters win
				merged[k] = v
			}
			specs = append(specs, Spec{Name: ps.Name, Params: merged})
			from = append(from, sp.Params)
			origin = append(origin, i)
		}
		if len(specs) > e.cfg.MaxTransformations {
			break // no need to expand further
		}
	}
	if len(specs) > e.cfg.MaxTransformations {
		n := len(specs)
		if n < len(ts) {
			n = len(ts)
		}
		return Chain{}, invalidf("Too many transformations: %d (the limit is %d)", n, e.cfg.MaxTransformations)
	}
	c := Chain{specs: specs, steps: make([]Step, len(specs))}
	// used[k] per preset occurrence: request parameters some step took.
	used := map[int]map[string]bool{}
	for i := range specs {
		hadDPR := specs[i].Params["dpr"] != ""
		u, err := applyHints(&specs[i], h)
		if err != nil {
			return Chain{}, err
		}
		c.hints.DPR = c.hints.DPR || u.DPR
		c.hints.Width = c.hints.Width || u.Width
		if hadDPR && from[i] != nil {
			if used[origin[i]] == nil {
				used[origin[i]] = map[string]bool{}
			}
			used[origin[i]]["dpr"] = true // consumed by applyHints
		}
		st, err := e.parseStep(&specs[i], from[i], h.Subject)
		if err != nil {
			return Chain{}, err
		}
		c.steps[i] = st
		if from[i] != nil {
			if used[origin[i]] == nil {
				used[origin[i]] = map[string]bool{}
			}
			for k := range from[i] {
				if _, kept := specs[i].Params[k]; kept {
					used[origin[i]][k] = true
				}
			}
		}
	}
	// A request parameter that no step of its preset takes is unknown.
	for i, u := range used {
		sp := ParseSpec(ts[i])
		var unknown []string
		for k := range sp.Params {
			if !u[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return Chain{}, invalidf("%s: Unknown parameter(s): %s", sp.Name, strings.Join(unknown, ", "))
		}
	}
	return c, nil
}

// parseStep looks sp up and parses its parameters. For a spec expanded from
// a preset, request parameters (reqParams) that the transformation does not
// take are dropped from sp rather than rejected: they fill only the steps
// that use them.
func (e *Engine) parseStep(sp *Spec, reqParams map[string]string, subject string) (Step, error) {
	t, ok := e.reg.Lookup(sp.Name)
	if !ok {
		return nil, invalidf("Transformation %q not registered", sp.Name)
	}
	if gt, ok := t.(guestTransformation); ok && subject != "" {
		if c, ok := gt.guest.(Canaried); ok {
			gt.guest = c.For(subject)
			t = gt
		}
	}
	p := NewParams(sp.Name, sp.Params)
	st, err := safeParse(t, p)
	if len(reqParams) > 0 {
		var drop []string
		for k := range reqParams {
			if !p.used[k] {
				drop = append(drop, k)
			}
		}
		if len(drop) > 0 {
			sort.Strings(drop)
			params := make(map[string]string, len(sp.Params))
			for k, v := range sp.Params {
				params[k] = v
			}
			for _, k := range drop {
				delete(params, k)
			}
			sp.Params = params
			p = NewParams(sp.Name, params)
			st, err = safeParse(t, p)
		}
	}
	if err == nil {
		// A transformation that forgot p.Err() still rejects unknown
		// parameters and recorded problems.
		err = p.Err()
	}
	if err != nil {
		return nil, asInvalid(sp.Name, err)
	}
	if st == nil {
		return nil, &Error{Kind: KindInternal, Msg: "Transformation failed", Err: errors.New(sp.Name + ": Parse returned no step")}
	}
	return st, nil
}

// safeParse calls t.Parse, turning a panic in a (possibly third-party)
// parser into an internal error rather than a crashed request.
func safeParse(t Transformation, p *Params) (st Step, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, &Error{Kind: KindInternal, Msg: "Transformation failed", Err: errors.New(p.transformation + ": parse panicked")}
		}
	}()
	return t.Parse(p)
}

// asInvalid makes a parse error a KindInvalid *Error naming the
// transformation, unless it already is an engine error or a guest's 5xx.
func asInvalid(name string, err error) error {
	var ee *Error
	if errors.As(err, &ee) || hasStatus(err, 500) {
		return err
	}
	return &Error{Kind: KindInvalid, Msg: name + ": " + err.Error()}
}
