package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// paramName is a word that could be a parameter's name.
var paramName = regexp.MustCompile(`^[A-Za-z_]\w*$`)

// RunOn explains a parameter value that does not parse and holds a comma.
// In `t[]=name:k=v,k=v` a value runs on to the next `,name=` (so that
// `poi=410,310` is one value), and a parameter written without its `=`
// (`width=100,height`) becomes part of the value before it. RunOn returns
// the clause to append to the value's message, saying where its own text
// ended and what to write instead, or "" for a value without a comma.
func RunOn(raw string) string {
	i := strings.IndexByte(raw, ',')
	if i < 0 {
		return ""
	}
	tail := raw[i:]
	if next, _, _ := strings.Cut(tail[1:], ","); paramName.MatchString(next) {
		return fmt.Sprintf(`; the value ran on past %q, which has no "=": write %s=<value>, or leave it out`, tail, next)
	}
	return fmt.Sprintf(`; the value ran on past %q: parameters are name=value, separated by commas`, tail)
}
