package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

func TestICC(t *testing.T) {
	path, err := vips.GetSRGBIEC6196621ICCProfilePath()
	if err != nil {
		t.Skipf("no sRGB profile from govips: %v", err)
	}
	tmp := filepath.Join(t.TempDir(), "gone.icc")
	eng := &Engine{cfg: Config{ICCProfiles: map[string]string{"default": path, "srgb": path, "gone": tmp}}}
	for spec, want := range map[string]string{
		"icc":                 "",
		"icc:profile=srgb":    "",
		"icc:profile=nope":    `The given ICC profile name ("nope") is unknown to the server.`,
		"icc:profile=gone":    "internal",
		"icc:profile=default": "",
	} {
		t.Run(spec, func(t *testing.T) {
			s := fxState(t, fxCard())
			s.engine = eng
			err := fxRun(t, s, spec)
			switch want {
			case "":
				if err != nil {
					t.Fatal(err)
				}
				if !s.Image.HasICCProfile() {
					t.Error("the profile is not embedded")
				}
				px := fxPixels(t, s).NRGBAAt(5, 90) // a pure red block
				if !fxNear(px, fxRGBA(255, 0, 0, 255), 8) {
					t.Errorf("sRGB to sRGB must keep colours, got %v", px)
				}
			case "internal":
				if err == nil || KindOf(err) != KindInternal {
					t.Errorf("missing file: %v, want an internal error", err)
				}
			default:
				if KindOf(err) != KindInvalid || !bytes.Contains([]byte(err.Error()), []byte(want)) {
					t.Errorf("got %v, want 400 %q", err, want)
				}
			}
		})
	}
	// No profiles configured (or none named default): 400.
	for _, e := range []*Engine{nil, {cfg: Config{ICCProfiles: map[string]string{"srgb": path}}}} {
		s := fxState(t, fxCard())
		s.engine = e
		err := fxRun(t, s, "icc")
		if KindOf(err) != KindInvalid || !bytes.Contains([]byte(err.Error()), []byte(`no profile is assigned to the "default" name`)) {
			t.Errorf("no default: %v", err)
		}
	}
	_ = os.Remove(tmp)
}
