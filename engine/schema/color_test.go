package schema_test

import (
	"testing"

	"github.com/vitrine/vitrine/engine/schema"
	"github.com/vitrine/vitrine/engine/schema/schematest"
)

func TestParseColor(t *testing.T) {
	t.Parallel()
	schematest.TestColors(t, true, func(s string, allowNone bool) (string, bool) {
		c, ok := schema.ParseColor(s, allowNone)
		return c.Hex(), ok
	})
}
