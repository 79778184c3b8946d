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
	x, err := e.expandPresets(ts)
	if err != nil {
		return Chain{}, err
	}
	c := Chain{specs: x.specs, steps: make([]Step, len(x.specs))}
	used := presetUse{}
	for i := range c.specs {
		sp, from, origin := &c.specs[i], x.from[i], x.origin[i]
		hadDPR := sp.Params["dpr"] != ""
		u, err := applyHints(sp, h)
		if err != nil {
			return Chain{}, err
		}
		c.hints.DPR = c.hints.DPR || u.DPR
		c.hints.Width = c.hints.Width || u.Width
		if hadDPR && from != nil {
			used.take(origin, "dpr") // consumed by applyHints
		}
		if c.steps[i], err = e.parseStep(sp, from, h.Subject); err != nil {
			return Chain{}, err
		}
		if from != nil {
			used.takeKept(origin, from, sp.Params)
		}
	}
	if err := used.check(ts); err != nil {
		return Chain{}, err
	}
	if err := c.checkVideoSteps(); err != nil {
		return Chain{}, err
	}
	return c, nil
}

// expansion is a chain's specs after preset expansion, with, for each,
// the request parameters given on the preset name it was expanded from
// (nil for a spec not from a preset) and the index in the request of the
// element it came from.
type expansion struct {
	specs  []Spec
	from   []map[string]string
	origin []int
}

// expandPresets parses each element of ts into a spec and expands the
// presets among them: a preset's parameters win over the request
// parameters given on its name, which fill the rest. A chain longer than
// MaxTransformations after expansion is KindInvalid.
func (e *Engine) expandPresets(ts []string) (expansion, error) {
	var x expansion
	for i, t := range ts {
		sp := ParseSpec(t)
		preset, ok := e.cfg.Presets[sp.Name]
		if !ok {
			x.add(sp, nil, i)
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
			x.add(Spec{Name: ps.Name, Params: merged}, sp.Params, i)
		}
		if len(x.specs) > e.cfg.MaxTransformations {
			break // no need to expand further
		}
	}
	if len(x.specs) > e.cfg.MaxTransformations {
		n := len(x.specs)
		if n < len(ts) {
			n = len(ts)
		}
		return expansion{}, invalidf("Too many transformations: %d (the limit is %d)", n, e.cfg.MaxTransformations)
	}
	return x, nil
}

// add appends sp, expanded from request parameters from (nil when not from
// a preset) of the request's element origin.
func (x *expansion) add(sp Spec, from map[string]string, origin int) {
	x.specs = append(x.specs, sp)
	x.from = append(x.from, from)
	x.origin = append(x.origin, origin)
}

// presetUse records, per preset named in a request (by its index in the
// request), the request parameters given on it that some step of the
// preset took.
type presetUse map[int]map[string]bool

// take records that a step of the preset at origin took parameter k.
func (u presetUse) take(origin int, k string) {
	if u[origin] == nil {
		u[origin] = map[string]bool{}
	}
	u[origin][k] = true
}

// takeKept records the request parameters (from) that a step of the preset
// at origin kept in its parameters after parsing (parseStep drops the ones
// it does not take). The preset is recorded even when the step kept none,
// so that check looks at its parameters.
func (u presetUse) takeKept(origin int, from, params map[string]string) {
	if u[origin] == nil {
		u[origin] = map[string]bool{}
	}
	for k := range from {
		if _, kept := params[k]; kept {
			u[origin][k] = true
		}
	}
}

// check reports a request parameter that no step of its preset took: it is
// unknown, KindInvalid.
func (u presetUse) check(ts []string) error {
	for i, taken := range u {
		sp := ParseSpec(ts[i])
		var unknown []string
		for k := range sp.Params {
			if !taken[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return invalidf("%s: Unknown parameter(s): %s", sp.Name, strings.Join(unknown, ", "))
		}
	}
	return nil
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
