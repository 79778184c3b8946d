package engine

import (
	"errors"
	"strings"
	"testing"
)

// TestParseChainErrors checks that every invalid chain is a KindInvalid
// error whose message names the transformation and the problem.
func TestParseChainErrors(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	tests := []struct {
		t    string
		want string // substring of the message; "" = valid
	}{
		{"nope", `Transformation "nope" not registered`},
		{"", `Transformation "" not registered`},
		{"thumbnail:width=0", "thumbnail: width must be between 1 and"},
		{"thumbnail:width=abc", `thumbnail: Invalid value for width: "abc"`},
		{"thumbnail:fit=cover", "thumbnail: Invalid value for fit"},
		{"thumbnail:size=3", "thumbnail: Unknown parameter(s): size"},
		{"thumbnail:width=100,height=100,fit=inset", ""},
		{"resize", "resize: Missing both width and height. You need to specify at least one of them"},
		{"resize:width=0", "resize: width must be between 1 and"},
		{"resize:height=-5", "resize: height must be between 1 and"},
		{"resize:width=10", ""},
		{"maxSize", ""},
		{"maxSize:width=0", "maxSize: width must be between 1 and"},
		{"crop:width=10", "crop: Missing required parameter: height"},
		{"crop:height=10", "crop: Missing required parameter: width"},
		{"crop:width=10,height=10,x=-1", "crop: x must be between 0 and"},
		{"crop:width=10,height=10,y=-1", "crop: y must be between 0 and"},
		{"crop:width=0,height=10", "crop: width must be between 1 and"},
		{"crop:width=10,height=10,mode=middle", "crop: Invalid value for mode"},
		{"crop:width=10,height=10,mode=center", ""},
		{"rotate", "rotate: Missing required parameter: angle"},
		{"rotate:angle=0", ""},
		{"rotate:angle=12.7", ""},
		{"rotate:angle=x", `rotate: Invalid value for angle: "x"`},
		{"rotate:angle=90,bg=zzz", "rotate: Invalid value for bg"},
		{"rotate:angle=45,bg=none", ""},
		{"compress", "compress: Missing required parameter: level"},
		{"compress:level=0", ""},
		{"compress:level=101", "compress: level must be between 0 and 100"},
		{"convert", "convert: Missing required parameter: type"},
		{"convert:type=bmp", "convert: Invalid value for type"},
		{"convert:type=webp", ""},
		{"border:width=0,height=0", ""},
		{"border:width=-1", "border: width must be between 0 and"},
		{"border:mode=outside", "border: Invalid value for mode"},
		{"border:color=12", "border: Invalid value for color"},
		{"canvas:width=0", "canvas: width must be between 1 and"},
		{"canvas:mode=left", "canvas: Invalid value for mode"},
		{"canvas:x=-20,y=-10,bg=f00", ""},
		{"smartSize:width=100", "smartSize: Both width and height needs to be specified"},
		{"smartSize:width=100,height=100,poi=5", "smartSize: Invalid POI format, expected format `<x>,<y>`"},
		{"smartSize:width=100,height=100,poi=a,b", "smartSize: Invalid POI format"},
		{"smartSize:width=100,height=100,crop=tight", "smartSize: Invalid crop value. Valid values are: close,medium,wide,full"},
		{"smartSize:width=100,height=100,poi=10,20,crop=full", ""},
		{"flipHorizontally:x=1", "flipHorizontally: Unknown parameter(s): x"},
		{"strip:all=1", "strip: Unknown parameter(s): all"},
		{"progressive", ""},
		{"autoRotate", ""},
		{"transpose", ""},
		{"transverse", ""},
		{"flipVertically", ""},
	}
	for _, tc := range tests {
		t.Run(tc.t, func(t *testing.T) {
			t.Parallel()
			c, err := e.ParseChain([]string{tc.t})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ParseChain(%q): %v", tc.t, err)
				}
				if c.Len() != 1 {
					t.Fatalf("Len = %d, want 1", c.Len())
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseChain(%q): no error, want %q", tc.t, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("kind = %v, want KindInvalid", KindOf(err))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestParseChainLimit(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Limits: Limits{MaxTransformations: 3}, Presets: map[string][]string{
		"four": {"flipVertically", "flipVertically", "flipVertically", "flipVertically"},
	}})
	if _, err := e.ParseChain([]string{"strip", "strip", "strip"}); err != nil {
		t.Fatalf("3 steps: %v", err)
	}
	_, err := e.ParseChain([]string{"strip", "strip", "strip", "strip"})
	if err == nil || err.Error() != "Too many transformations: 4 (the limit is 3)" || KindOf(err) != KindInvalid {
		t.Errorf("4 steps: %v", err)
	}
	if _, err := e.ParseChain([]string{"four"}); err == nil {
		t.Error("a preset expanding past the limit was accepted")
	}
}

func TestParseChainPresets(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Presets: map[string][]string{
		"thumb":  {"thumbnail:width=100,fit=inset", "desaturate"},
		"square": {"crop:mode=center"},
	}})
	tests := []struct {
		ts      []string
		wantKey string
		wantErr string
	}{
		{ts: []string{"thumb"}, wantKey: "thumbnail:fit=inset,width=100|desaturate"},
		// Preset parameters win; request parameters fill the rest, and only
		// the steps that take them.
		{ts: []string{"thumb:width=5,height=40"}, wantKey: "thumbnail:fit=inset,height=40,width=100|desaturate"},
		{ts: []string{"square:width=10,height=10", "strip"}, wantKey: "crop:height=10,mode=center,width=10|strip"},
		{ts: []string{"square"}, wantErr: "crop: Missing required parameter: width"},
		{ts: []string{"thumb:foo=1"}, wantErr: "thumb: Unknown parameter(s): foo"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.ts, "&"), func(t *testing.T) {
			c, err := e.ParseChain(tc.ts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Key() != tc.wantKey {
				t.Errorf("Key = %q, want %q", c.Key(), tc.wantKey)
			}
			if len(c.Names()) != c.Len() {
				t.Errorf("Names %v not aligned with %d steps", c.Names(), c.Len())
			}
		})
	}
}

func TestChainKeyStable(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	a, err := e.ParseChain([]string{"thumbnail:width=10,height=20", "strip"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.ParseChain([]string{"thumbnail:height=20,width=10", "strip"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Key() != b.Key() {
		t.Errorf("keys differ: %q vs %q", a.Key(), b.Key())
	}
	if got := a.Names(); len(got) != 2 || got[0] != "thumbnail" || got[1] != "strip" {
		t.Errorf("Names = %v", got)
	}
}

// TestChainNeedsMetadata: the API skips the metadata lookup when no step
// reads it, so every step that does must say so.
func TestChainNeedsMetadata(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	for _, c := range []struct {
		chain []string
		want  bool
	}{
		{[]string{"thumbnail:width=10,height=20", "strip"}, false},
		{nil, false},
		{[]string{"resize:width=10", "smartSize:width=10,height=10"}, true},
		{[]string{"drawPois"}, true},
	} {
		ch, err := e.ParseChain(c.chain)
		if err != nil {
			t.Fatal(err)
		}
		if got := ch.NeedsMetadata(); got != c.want {
			t.Errorf("%v: NeedsMetadata = %v, want %v", c.chain, got, c.want)
		}
	}
}

// TestRegistryHasEveryTransformation lists every native transformation, so
// that a lost file is caught.
func TestRegistryHasEveryTransformation(t *testing.T) {
	t.Parallel()
	want := strings.Fields(`autoRotate blur border canvas compress contrast convert crop desaturate drawPois
		flipHorizontally flipVertically frame histogram icc level maxSize modulate progressive resize rotate sepia
		preview sharpen smartSize sprite strip text thumbnail transpose transverse vignette watermark`)
	r := NewRegistry()
	for _, name := range want {
		if _, ok := r.Lookup(name); !ok {
			t.Errorf("transformation %q is not registered", name)
		}
	}
	if got := len(r.Names()); got != len(want) {
		t.Errorf("registry has %d transformations %v, want %d", got, r.Names(), len(want))
	}
}
