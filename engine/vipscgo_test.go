package engine

import (
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestImageSlot fails loudly when govips' ImageRef layout no longer holds
// the image where imageSlot reads it: what the shim reads through the slot
// must be the image govips reports, before and after govips replaces it,
// and an image the shim puts there must be what govips then reports.
func TestImageSlot(t *testing.T) {
	t.Parallel()
	f := findImageField()
	if f.Name != "image" || f.Offset != imageField.Offset {
		t.Fatalf("govips ImageRef field %q at %d, the shim reads %d", f.Name, f.Offset, imageField.Offset)
	}
	for _, tc := range []struct {
		name  string
		w, h  int
		alpha bool
		crop  [4]int
	}{
		{"rgb", 40, 30, false, [4]int{3, 4, 17, 9}},
		{"rgba", 33, 21, true, [4]int{0, 0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustLoad(t, source(t, tc.w, tc.h, "png", tc.alpha))
			defer r.Close()
			check := func(step string) {
				t.Helper()
				if got, want := imageBytes(r), r.Width()*r.Height()*r.Bands(); got != want {
					t.Fatalf("%s: the shim reads a %d-byte image, govips reports %dx%dx%d (%d bytes): "+
						"govips' ImageRef layout changed, update imageSlot (vipscgo.go)",
						step, got, r.Width(), r.Height(), r.Bands(), want)
				}
			}
			check("loaded")
			if err := r.Crop(tc.crop[0], tc.crop[1], tc.crop[2], tc.crop[3]); err != nil {
				t.Fatal(err)
			}
			check("after govips' crop")
			if err := r.Cast(vips.BandFormatUchar); err != nil {
				t.Fatal(err)
			}
			// The shim replaces the image: govips must see the new one.
			if err := copyMemory(r); err != nil {
				t.Fatal(err)
			}
			if r.Width() != tc.crop[2] || r.Height() != tc.crop[3] {
				t.Fatalf("after the shim's copy govips reports %dx%d, want %dx%d", r.Width(), r.Height(), tc.crop[2], tc.crop[3])
			}
			check("after the shim's copy")
			if err := r.ExtractBand(0, 1); err != nil {
				t.Fatal(err)
			}
			check("after govips' extract_band")
		})
	}
}
