package web

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/vitrine/vitrine/api"
)

// ruleForm reads the rule editor's fields: a group, or resources ticked in
// the picker, and users.
func ruleForm(r *http.Request) keyForm {
	f := keyForm{Group: strings.TrimSpace(r.PostFormValue("group")), Users: r.PostFormValue("users")}
	for _, v := range r.PostForm["resources"] {
		f.Resources = append(f.Resources, splitFields(v)...)
	}
	return f
}

// ruleBody is the JSON of the form's access rule; the API validates it.
func (f keyForm) ruleBody() []byte {
	b, _ := json.Marshal(f.rule())
	return b
}

// rule is the form's access rule as the API takes it.
func (f keyForm) rule() map[string]any {
	rule := map[string]any{}
	if f.Group != "" {
		rule["group"] = f.Group
	}
	if len(f.Resources) > 0 || f.Group == "" {
		rule["resources"] = append([]string{}, f.Resources...)
	}
	if u := strings.TrimSpace(f.Users); u == "*" {
		rule["users"] = "*"
	} else {
		rule["users"] = splitFields(f.Users)
	}
	return rule
}

func splitFields(s string) []string {
	// Never nil: an empty list is written as [] in the rule's JSON.
	return append([]string{}, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' })...)
}

// resourceFamily is one row of the resource picker: a resource (images,
// metadata, ...) and its methods.
type resourceFamily struct {
	Name    string
	Methods []resourceChoice
}

type resourceChoice struct {
	Resource, Method string
	// Slug is Resource fit for an element id (no dot, which CSS reads as
	// a class).
	Slug    string
	Checked bool
}

// resourceFamilies lays out every resource there is (api.Resources) for
// the picker, ticking those in checked.
func resourceFamilies(checked []string) []resourceFamily {
	var out []resourceFamily
	for _, res := range api.Resources() {
		name, method, _ := strings.Cut(res, ".")
		if len(out) == 0 || out[len(out)-1].Name != name {
			out = append(out, resourceFamily{Name: name})
		}
		f := &out[len(out)-1]
		f.Methods = append(f.Methods, resourceChoice{Resource: res, Method: method,
			Slug: name + "-" + method, Checked: slices.Contains(checked, res)})
	}
	return out
}
