package engine

import (
	"testing"

	"github.com/vitrine/vitrine/engine/schema"
	"github.com/vitrine/vitrine/engine/schema/schematest"
)

// TestColorSyntax: the engine's colour parameters take the one colour
// syntax, as the filters and the admin UI do (schematest.ColorCases).
func TestColorSyntax(t *testing.T) {
	t.Parallel()
	schematest.TestColors(t, true, func(s string, allowNone bool) (string, bool) {
		c, ok := ParseColor(s, allowNone)
		return schema.Color(c).Hex(), ok
	})
}
