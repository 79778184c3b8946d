package engine

// convert sets the output format: jpg, png, gif, webp, avif or jxl (jpeg is
// accepted for jpg). An extension in the request path takes precedence.
type convert struct{ format string }

func init() {
	register("convert", describe(parseConvert, "Converts the image to another format.",
		enumParam("type", []string{"jpg", "jpeg", "png", "gif", "webp", "avif", "jxl"}, "Output format.").required(),
	))
}

func parseConvert(p *Params) (Step, error) {
	c := &convert{}
	// Read as a string: jpeg is a synonym, and the message leaves it out.
	t := p.String("type")
	if t == "jpeg" {
		t = "jpg"
	}
	switch t {
	case "jpg", "png", "gif", "webp", "avif", "jxl":
		c.format = t
	default:
		p.Fail("Invalid value for type: %q (allowed: jpg, png, gif, webp, avif, jxl)", t)
	}
	return c, p.Err()
}

func (c *convert) Apply(s *State) error {
	s.Output.Format = c.format
	return nil
}

func (*convert) streams() {}

// ConvertFormat is the output format the chain's last convert step sets
// ("" without one): with no extension in the path it decides the
// answer's format, before content negotiation.
func (c Chain) ConvertFormat() string {
	f := ""
	for _, st := range c.steps {
		if cv, ok := st.(*convert); ok {
			f = cv.format
		}
	}
	return f
}

var (
	_ Step     = (*convert)(nil)
	_ streamer = (*convert)(nil)
)
