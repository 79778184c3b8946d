package storagetest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// testQualities stores auto-quality answers, replaces one, reads them
// back (a relative target's key with its answer), refuses them for a missing image, and sees them go with their
// image.
func testQualities(t *testing.T, db *storage.DB) {
	mustInsert(t, db, image("u", "qa", base), image("u", "qb", base.Add(time.Second)))
	jpg := storage.QualityAnswer{Format: "jpg", Class: 2, Target: 80, Quality: 71, Score: 80.4, Bytes: 51234}
	webp := storage.QualityAnswer{Format: "webp", Class: 2, Target: 81.3, Key: "high:jpg80+0", Quality: 77, Score: 81.2, Bytes: 40321}
	for _, a := range []storage.QualityAnswer{jpg, webp, {Format: "jpg", Class: 2, Target: 70, Quality: 50, Score: 70.1, Bytes: 30000}} {
		if err := db.SetQuality(ctx(t), "u", "qa", a); err != nil {
			t.Fatal(err)
		}
	}
	// The third replaced the first: one row per format and size class.
	jpg = storage.QualityAnswer{Format: "jpg", Class: 2, Target: 70, Quality: 50, Score: 70.1, Bytes: 30000}
	got, err := db.Qualities(ctx(t), "u", "qa")
	if err != nil || !reflect.DeepEqual(got, []storage.QualityAnswer{jpg, webp}) {
		t.Fatalf("Qualities = %+v, %v; want %+v", got, err, []storage.QualityAnswer{jpg, webp})
	}
	if got, err := db.Qualities(ctx(t), "u", "qb"); err != nil || len(got) != 0 {
		t.Fatalf("Qualities of an image without answers = %v, %v", got, err)
	}
	if err := db.SetQuality(ctx(t), "u", "missing", jpg); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("SetQuality of a missing image: %v, want ErrNotExist", err)
	}
	if err := db.SetQuality(ctx(t), "u", "qa", storage.QualityAnswer{Format: "a-format-name-too-long"}); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("SetQuality with a long format: %v, want ErrInvalid", err)
	}
	if err := db.SetQuality(ctx(t), "u", "qa", storage.QualityAnswer{Format: "jpg", Key: strings.Repeat("k", 65)}); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("SetQuality with a long target key: %v, want ErrInvalid", err)
	}
	if err := db.DeleteImage(ctx(t), "u", "qa"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Qualities(ctx(t), "u", "qa"); err != nil || len(got) != 0 {
		t.Fatalf("Qualities after delete = %v, %v; want none", got, err)
	}
}
