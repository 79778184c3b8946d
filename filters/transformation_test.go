package filters

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"math/rand/v2"
	"testing"
)

// testImage is a w x h image of seeded random pixels.
func testImage(w, h int, seed uint64) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.UintN(256))
	}
	return img
}

// loadKit loads one kit transformation in its own host.
func loadKit(t *testing.T, mode string, extra map[string]any) Transformation {
	t.Helper()
	dir := t.TempDir()
	kit(t, dir, "kit", KindTransformation, mode, extra)
	h := newHost(t, dir, nil)
	tr, ok := h.Current().Transformation("kit")
	if !ok {
		t.Fatalf("kit not loaded: %+v", h.Current().Status())
	}
	return tr
}

// rejection returns the message of a KindRejected error (the kit reports
// through reject).
func rejection(t *testing.T, err error) string {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) || fe.Kind != KindRejected {
		t.Fatalf("want a rejection, got %v", err)
	}
	return fe.Msg
}

func TestTransformInvert(t *testing.T) {
	t.Parallel()
	tr := loadKit(t, "invert", nil)
	in := testImage(37, 21, 1)
	out, err := tr.Transform(context.Background(), in, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Rect != in.Rect {
		t.Fatalf("size %v, want %v", out.Rect, in.Rect)
	}
	for i := range in.Pix {
		want := 255 - in.Pix[i]
		if i%4 == 3 {
			want = in.Pix[i]
		}
		if out.Pix[i] != want {
			t.Fatalf("byte %d = %d, want %d", i, out.Pix[i], want)
		}
	}
	// A sub-image (stride != 4*width) is compacted before the guest sees it.
	sub := in.SubImage(image.Rect(3, 2, 10, 9)).(*image.NRGBA)
	out, err = tr.Transform(context.Background(), sub, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.NRGBAAt(0, 0).R, 255-sub.NRGBAAt(3, 2).R; got != want {
		t.Fatalf("sub-image pixel = %d, want %d", got, want)
	}
}

func TestTransformChangesSize(t *testing.T) {
	t.Parallel()
	tr := loadKit(t, "resize", map[string]any{"params": map[string]any{
		"width":  map[string]any{"type": "int", "min": 1, "max": 5000, "required": true},
		"height": map[string]any{"type": "int", "min": 1, "max": 5000, "required": true}}})
	p, err := tr.CheckParams(map[string]string{"width": "300", "height": "7"})
	if err != nil {
		t.Fatal(err)
	}
	in := testImage(10, 10, 2)
	out, err := tr.Transform(context.Background(), in, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Rect.Dx() != 300 || out.Rect.Dy() != 7 || out.NRGBAAt(299, 6) != in.NRGBAAt(0, 0) {
		t.Fatalf("out %v, pixel %v want %v", out.Rect, out.NRGBAAt(299, 6), in.NRGBAAt(0, 0))
	}
	if _, err := tr.CheckParams(map[string]string{"width": "0", "height": "7"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("width=0: %v", err)
	}
}

// TestTransformParams shows the guest reading exactly the normalised values.
func TestTransformParams(t *testing.T) {
	t.Parallel()
	tr := loadKit(t, "params", map[string]any{"params": map[string]any{
		"i": map[string]any{"type": "int"}, "n": map[string]any{"type": "number"},
		"b": map[string]any{"type": "bool"}, "s": map[string]any{"type": "string"},
		"c": map[string]any{"type": "color", "default": "abc"}, "e": map[string]any{"type": "enum", "values": []string{"x", "y"}}}})
	p, err := tr.CheckParams(map[string]string{"i": "-0042", "n": "2.50", "b": "1", "s": "a b", "e": "y"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Transform(context.Background(), testImage(1, 1, 3), p, nil)
	var got map[string]string
	if err := json.Unmarshal([]byte(rejection(t, err)), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"i": "-42", "n": "2.5", "b": "true", "s": "a b", "c": "aabbccff", "e": "y"}
	if len(got) != len(want) {
		t.Fatalf("guest read %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("guest read %s=%q, want %q", k, got[k], v)
		}
	}
}

// TestHostFunctionCodes checks the error codes of ABI.md section 5 as a
// guest sees them: out-of-range pointers, bad lengths, calls not available
// in a transformation, bad arguments.
func TestHostFunctionCodes(t *testing.T) {
	t.Parallel()
	tr := loadKit(t, "probe", map[string]any{"settings": map[string]any{"x": 1}})
	_, err := tr.Transform(context.Background(), testImage(2, 2, 4), map[string]string{}, nil)
	var got map[string]int32
	if err := json.Unmarshal([]byte(rejection(t, err)), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]int32{
		"paramAbsent": -1, "paramFault": -2, "pixelsReadFault": -2, "pixelsReadSmall": 16,
		"pixelsWriteLen": -3, "pixelsWriteZero": -5, "pixelsWriteFault": -2,
		"eventInTransform": -4, "bodyInTransform": -4, "metadataSetInT": -4, "statsSetInT": -4,
		"statsAddBadName": -3, "logBadLevel": -3, "logBadUTF8": -3, "rejectBadStatus": -3,
		"rejectTooLong": -5, "settingsSmallBuf": int32(len(`{"mode":"probe","x":1}`)), "metadataGetInT": 2,
		"imageWidth": 2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

// TestSandbox checks section 6: no filesystem, environment or arguments,
// and a fixed clock without the capability; the real clock with it.
func TestSandbox(t *testing.T) {
	t.Parallel()
	tr := loadKit(t, "escape", nil)
	_, err := tr.Transform(context.Background(), testImage(1, 1, 5), nil, nil)
	var got map[string]any
	if err := json.Unmarshal([]byte(rejection(t, err)), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"readFile", "readDir", "writeFile"} {
		if got[k] != true {
			t.Errorf("%s succeeded in the sandbox: %v", k, got)
		}
	}
	if got["env"] != 0.0 || got["year"] != 2000.0 {
		t.Errorf("env or clock leaked: %v", got)
	}

	dir := t.TempDir()
	kit(t, dir, "kit", KindTransformation, "escape", map[string]any{"capabilities": []string{"clock"}})
	h := newHost(t, dir, func(c *Config) { c.Allow = []string{CapClock} })
	tr, _ = h.Current().Transformation("kit")
	_, err = tr.Transform(context.Background(), testImage(1, 1, 5), nil, nil)
	if err := json.Unmarshal([]byte(rejection(t, err)), &got); err != nil {
		t.Fatal(err)
	}
	if got["year"].(float64) < 2025 {
		t.Errorf("clock capability granted, but the guest reads year %v", got["year"])
	}
}
