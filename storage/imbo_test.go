package storage

import (
	"slices"
	"testing"
)

// TestImboQuery reads the short URL queries Imbo stores: PHP-serialized
// (string lengths in bytes, so a multi-byte text counts its bytes), or a
// plain query string; a length that runs past the data is an error.
func TestImboQuery(t *testing.T) {
	for _, c := range []struct {
		stored string
		want   []string
		bad    bool
	}{
		{`a:1:{s:1:"t";a:2:{i:0;s:28:"thumbnail:width=20,height=20";i:1;s:10:"desaturate";}}`, []string{"thumbnail:width=20,height=20", "desaturate"}, false},
		{`a:1:{s:1:"t";a:1:{i:0;s:17:"watermark:x=ærø";}}`, []string{"watermark:x=ærø"}, false},
		{`a:2:{s:1:"t";a:1:{i:0;s:4:"flip";}s:9:"publicKey";s:5:"alice";}`, []string{"flip"}, false},
		{`a:0:{}`, nil, false},
		{`?t[]=flop&t[]=border:width=2`, []string{"flop", "border:width=2"}, false},
		{`a:1:{s:1:"t";a:1:{i:0;s:99:"flip";}}`, nil, true},
		{`a:1:{s:1:"t";a:1:{i:0;i:5;}}`, nil, true},
		{`a:9999:{`, nil, true},
	} {
		got, err := imboQueryTransformations(c.stored)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, %v; want %q (error: %v)", c.stored, got, err, c.want, c.bad)
		}
	}
}
