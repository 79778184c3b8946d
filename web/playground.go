package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// stepView is one step of the chain with a field per parameter.
type stepView struct {
	Index       int
	Name        string
	Description string
	Fields      []fieldView
	Spec        string // name:k=v,...
	Last        bool
}

// fieldView is one generated form control.
type fieldView struct {
	ID, Name, Label, Type, Value, Hint string
	Required                           bool
	Min, Max, Step                     string
	Values                             []string
	Default                            string
	// Multiline is a text to write (the text transformation's): a
	// textarea across the step's width, new lines allowed.
	Multiline bool
}

// playgroundView is the transformation playground.
type playgroundView struct {
	Page            pageView
	Action          string
	User, Image     string
	Ext             string
	Exts            []string
	Available       []api.Transformation
	Steps           []stepView
	Query           string
	Preview         string
	SignedURL       string
	Error           string
	PreviewEndpoint string
	HasWASM         bool
	// Images are the user's images to pick from; Presets the configured
	// presets to start from.
	Images  []option
	Presets []presetView
	// Before is the original at the preview's size; OutputSize the
	// transformed image's bytes and pixels.
	Before, OutputSize string
}

var outputFormats = []string{"webp", "jpg", "png", "gif", "avif"}

// chain is the playground's state as the form carries it.
type chain struct {
	user, image, ext string
	steps            []chainStep
}

type chainStep struct {
	name   string
	params map[string]string
}

// readChain reads the form: user, image, ext, and per step i the fields
// s<i> (name) and s<i>.<param>.
func readChain(q url.Values) chain {
	c := chain{user: strings.TrimSpace(q.Get("user")), image: strings.TrimSpace(q.Get("image")), ext: q.Get("ext")}
	if !slices.Contains(outputFormats, c.ext) {
		c.ext = "webp"
	}
	for i := 0; i < 32; i++ {
		name := q.Get("s" + strconv.Itoa(i))
		if name == "" {
			continue
		}
		st := chainStep{name: name, params: map[string]string{}}
		prefix := "s" + strconv.Itoa(i) + "."
		for k, v := range q {
			if strings.HasPrefix(k, prefix) && len(v) > 0 && strings.TrimSpace(v[len(v)-1]) != "" {
				st.params[strings.TrimPrefix(k, prefix)] = strings.TrimSpace(v[len(v)-1])
			}
		}
		c.steps = append(c.steps, st)
	}
	return c
}

// apply carries out a button's operation: add, up:i, down:i, remove:i.
func (c *chain) apply(op, add string) {
	verb, arg, _ := strings.Cut(op, ":")
	i, _ := strconv.Atoi(arg)
	ok := i >= 0 && i < len(c.steps)
	switch {
	case verb == "add" && add != "" && len(c.steps) < 32:
		c.steps = append(c.steps, chainStep{name: add, params: map[string]string{}})
	case verb == "remove" && ok:
		c.steps = slices.Delete(c.steps, i, i+1)
	case verb == "up" && ok && i > 0:
		c.steps[i-1], c.steps[i] = c.steps[i], c.steps[i-1]
	case verb == "down" && ok && i < len(c.steps)-1:
		c.steps[i+1], c.steps[i] = c.steps[i], c.steps[i+1]
	}
}

// values encodes the state back into form values.
func (c chain) values() url.Values {
	v := url.Values{"user": {c.user}, "image": {c.image}, "ext": {c.ext}}
	for i, s := range c.steps {
		v.Set("s"+strconv.Itoa(i), s.name)
		for k, val := range s.params {
			v.Set("s"+strconv.Itoa(i)+"."+k, val)
		}
	}
	return v
}

// specs returns the t[] values, parameters in description order.
func (c chain) specs(descs map[string]api.Transformation) []string {
	out := make([]string, 0, len(c.steps))
	for _, s := range c.steps {
		var parts []string
		for _, p := range descs[s.name].Params {
			if v, ok := s.params[p.Name]; ok {
				parts = append(parts, p.Name+"="+v)
			}
		}
		spec := s.name
		if len(parts) > 0 {
			spec += ":" + strings.Join(parts, ",")
		}
		out = append(out, spec)
	}
	return out
}

// playground builds a chain step by step. Every button is a GET submit
// of the whole form, so it works without JavaScript; playground.js only
// refreshes the preview as fields change.
func (u *UI) playground(q *request) error {
	in := q.r.URL.Query()
	c := readChain(in)
	if op := in.Get("op"); op != "" {
		if op == "preset" {
			var list api.TransformationList
			if err := q.api.getJSON(q.r.Context(), "/transformations", nil, &list); err != nil {
				return err
			}
			c.usePreset(list.Presets, in.Get("preset"))
		}
		c.apply(op, in.Get("add"))
		// Why a redirect: the URL then holds the state, not the operation,
		// so reloading or sharing it does not repeat the operation.
		http.Redirect(q.w, q.r, q.path("/playground")+"?"+c.values().Encode(), http.StatusSeeOther)
		return nil
	}
	v, err := q.buildPlayground(c)
	if err != nil {
		return err
	}
	return q.render(http.StatusOK, playgroundPage(v))
}

// previewJSON is what playground.js gets for the current form.
type previewJSON struct {
	Preview   string `json:"preview"`
	Before    string `json:"before"`
	Size      string `json:"size"`
	Query     string `json:"query"`
	SignedURL string `json:"signedUrl"`
	Error     string `json:"error"`
}

// playgroundPreview answers playground.js with the signed preview URL of
// the form's chain and the API's verdict on it.
func (u *UI) playgroundPreview(q *request) error {
	v, err := q.buildPlayground(readChain(q.r.URL.Query()))
	if err != nil {
		return err
	}
	q.w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(q.w).Encode(previewJSON{Preview: v.Preview, Before: v.Before, Size: v.OutputSize, Query: v.Query, SignedURL: v.SignedURL, Error: v.Error})
}

func (q *request) buildPlayground(c chain) (playgroundView, error) {
	ctx := q.r.Context()
	v := playgroundView{Page: q.page("Transformation playground", "playground"), Action: q.path("/playground"),
		Ext: c.ext, Exts: outputFormats, PreviewEndpoint: q.path("/playground/preview")}
	var list api.TransformationList
	if err := q.api.getJSON(ctx, "/transformations", nil, &list); err != nil {
		return v, err
	}
	v.Available, v.Presets = list.Transformations, list.Presets
	descs := map[string]api.Transformation{}
	for _, t := range list.Transformations {
		descs[t.Name] = t
		v.HasWASM = v.HasWASM || t.Kind == "wasm"
	}
	if c.user == "" || c.image == "" {
		l, err := q.list(ctx, "/images", url.Values{"limit": {"1"}, "sort[]": {"added:desc"}})
		if err == nil && len(l.Images) > 0 {
			c.user, c.image = l.Images[0].User, l.Images[0].ID
		}
	}
	q.pickImages(ctx, &v, &c)
	v.User, v.Image = c.user, c.image
	for i, s := range c.steps {
		d, ok := descs[s.name]
		sv := stepView{Index: i, Name: s.name, Description: d.Description, Last: i == len(c.steps)-1}
		if !ok {
			sv.Description = "Unknown transformation."
		}
		for _, p := range d.Params {
			sv.Fields = append(sv.Fields, field(i, p, s.params[p.Name]))
		}
		v.Steps = append(v.Steps, sv)
	}
	specs := c.specs(descs)
	for i := range v.Steps {
		v.Steps[i].Spec = specs[i]
	}
	qs := make([]string, len(specs))
	for i, s := range specs {
		qs[i] = "t[]=" + s
	}
	v.Query = strings.Join(qs, "&")
	if c.user == "" || c.image == "" {
		v.Error = "Choose an image: give its user and identifier."
		return v, nil
	}
	path := q.imagePath(c.user, c.image) + "." + c.ext
	params := url.Values{}
	if len(specs) > 0 {
		params["t[]"] = specs
	}
	v.Before = q.api.signedURL(q.imagePath(c.user, c.image)+".webp", url.Values{"t[]": {"maxSize:width=960,height=960"}})
	v.SignedURL = q.api.signedURL(path, params)
	preview := url.Values{"t[]": append(slices.Clone(specs), "maxSize:width=960,height=960")}
	v.Preview = q.api.signedURL(path, preview)
	// The API judges the chain exactly as it would for any client.
	r, err := q.api.do(ctx, http.MethodHead, path, params, nil, "")
	if err != nil {
		return v, err
	}
	if e := r.err(); e != nil {
		v.Error = e.Message
		v.Preview = ""
		return v, nil
	}
	v.OutputSize = outputSize(r.Header)
	return v, nil
}

// field turns a parameter description into a form control.
func field(step int, p api.TransformationParam, value string) fieldView {
	f := fieldView{ID: fmt.Sprintf("s%d-%s", step, p.Name), Name: fmt.Sprintf("s%d.%s", step, p.Name), Label: p.Name,
		Type: string(p.Type), Value: value, Hint: p.Description, Required: p.Required, Values: p.Values}
	if p.Default != nil {
		f.Default = fmt.Sprint(p.Default)
	}
	if p.Min != nil {
		f.Min = strconv.FormatFloat(*p.Min, 'f', -1, 64)
	}
	if p.Max != nil {
		f.Max = strconv.FormatFloat(*p.Max, 'f', -1, 64)
	}
	f.Multiline = p.Type == "string" && p.Name == "text"
	f.Step = "1"
	if p.Type == "number" {
		f.Step = "any"
	}
	return f
}
