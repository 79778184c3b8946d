package web

import "testing"

func TestPrettyJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"x \u0026 y \u003cb\u003e"}`, "{\n  \"a\": \"x & y <b>\"\n}"},
		{`{"n":1.50,"big":12345678901234567890}`, "{\n  \"big\": 12345678901234567890,\n  \"n\": 1.50\n}"},
		{`[]`, "[]"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := prettyJSON([]byte(c.in))
			if err != nil || got != c.want {
				t.Fatalf("prettyJSON(%s) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
	if _, err := prettyJSON([]byte(`{"a":`)); err == nil {
		t.Fatal("prettyJSON accepted broken JSON")
	}
}
