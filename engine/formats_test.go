package engine

import (
	"context"
	"image/color"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// encodeInput encodes the test picture as any input type, HEIC included
// (which the engine decodes but does not write).
func encodeInput(t *testing.T, ext string) []byte {
	t.Helper()
	if ext != "heic" {
		if ext == "jxl" {
			ref := mustLoad(t, source(t, 64, 48, "png", false))
			defer ref.Close()
			out, _, err := ref.ExportJxl(&vips.JxlExportParams{Distance: 1, Effort: 3})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		if ext == "avif" {
			ref := mustLoad(t, source(t, 64, 48, "png", false))
			defer ref.Close()
			out, _, err := ref.ExportAvif(&vips.AvifExportParams{Quality: 90, Bitdepth: 8, Effort: 2})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		return source(t, 64, 48, ext, false)
	}
	ref := mustLoad(t, source(t, 64, 48, "png", false))
	defer ref.Close()
	out, _, err := ref.ExportHeif(&vips.HeifExportParams{Quality: 90})
	if err != nil {
		t.Skipf("libheif cannot encode HEIC here: %v", err)
	}
	return out
}

func TestUploadFormats(t *testing.T) {
	t.Parallel()
	mimes := map[string]string{"jpg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
		"tif": "image/tiff", "avif": "image/avif", "heic": "image/heic", "jxl": "image/jxl"}
	def := newTestEngine(t, Config{})
	all := newTestEngine(t, Config{Uploads: Uploads{Formats: InputFormats}})
	for _, ext := range InputFormats {
		t.Run(ext, func(t *testing.T) {
			data := encodeInput(t, ext)
			info, err := all.Inspect(context.Background(), data)
			if err != nil || info.Ext != ext || info.Mime != mimes[ext] || info.Width != 64 || info.Height != 48 {
				t.Fatalf("allowed: %+v, %v", info, err)
			}
			_, err = def.Inspect(context.Background(), data)
			switch ext {
			case "jpg", "png", "gif", "webp":
				if err != nil {
					t.Errorf("default formats refuse %s: %v", ext, err)
				}
			default:
				if KindOf(err) != KindUnsupported || err.Error() != "Unsupported image type: "+mimes[ext] {
					t.Errorf("default formats: %v, want unsupported %s", err, mimes[ext])
				}
			}
			// Transformed like any other; HEIC, which the engine does not
			// write, comes out as JPEG unless a format is asked for.
			res := run(t, all, data, "", Env{}, "resize:width=32")
			want := ext
			if ext == "heic" {
				want = "jpg"
			}
			if res.Ext != want || res.Width != 32 || res.Height != 24 {
				t.Errorf("resize: %s %dx%d, want %s 32x24", res.Ext, res.Width, res.Height, want)
			}
			if got := pixel(t, run(t, all, data, "png", Env{}).Data, 8, 6); !near(got, color.NRGBA{230, 20, 20, 255}, 24) {
				t.Errorf("to png: red block is %v", got)
			}
		})
	}
}

func TestUploadFormatsConfig(t *testing.T) {
	if err := (Config{Uploads: Uploads{Formats: []string{"jpg", "bmp"}}}).Validate(); err == nil {
		t.Error("bmp accepted as an upload format")
	}
	if err := (Config{Uploads: Uploads{Formats: []string{"heic", "avif"}}}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestSniffHEIF(t *testing.T) {
	box := func(major string, compat ...string) []byte {
		b := []byte{0, 0, 0, byte(16 + 4*len(compat))}
		b = append(b, "ftyp"+major+"\x00\x00\x00\x00"...)
		for _, c := range compat {
			b = append(b, c...)
		}
		return append(b, "....meta"...)
	}
	for _, c := range []struct {
		data []byte
		ext  string
	}{
		{box("avif", "mif1"), "avif"},
		{box("mif1", "miaf", "avif"), "avif"},
		{box("heic", "mif1"), "heic"},
		{box("mif1", "heic"), "heic"},
		{box("isom", "mp41"), ""},
		{box("mif1", "jpeg"), ""},
		{[]byte("\x00\x00\x00\x18ftypavif"), ""}, // box larger than the data
	} {
		f, ok := sniff(c.data)
		if f.ext != c.ext || ok != (c.ext != "") {
			t.Errorf("sniff(%q) = %q, %v; want %q", c.data, f.ext, ok, c.ext)
		}
	}
}
