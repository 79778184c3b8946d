package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// TestAnalyzeEXIFByUploadRules: `vitrine analyze` copies EXIF tags into
// metadata by the rule of uploads: the keys already there are kept, and
// tags that would take the document over limits.maxMetadataBytes are left
// out (counted, not a failure), the metadata untouched.
func TestAnalyzeEXIFByUploadRules(t *testing.T) {
	ctx := context.Background()
	photo, err := os.ReadFile(filepath.Join("engine", "testdata", "private.jpg")) // carries Make and Model
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		maxBytes int64
		written  int
		leftOut  int
	}{
		{"WithinLimits", 0, 1, 0},
		{"OverMaxMetadataBytes", 40, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := &fileConfig{}
			cfg.API.Limits.MaxMetadataBytes = tc.maxBytes
			st := &stores{cfg: cfg}
			if st.db, err = storage.Open(ctx, "sqlite://"+filepath.Join(dir, "vitrine.db"), storage.Options{Secret: []byte("s")}); err != nil {
				t.Fatal(err)
			}
			if st.blobs, err = storage.OpenBlobs(ctx, "file://"+filepath.Join(dir, "images")); err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			img := storage.Image{User: "u", Identifier: "photo", Size: int64(len(photo)), Extension: "jpg", Mime: "image/jpeg",
				Width: 8, Height: 8, BlobToken: storage.NewBlobToken(), Metadata: map[string]any{"title": "kept"}}
			if err := st.blobs.Put(ctx, img.Key(), photo); err != nil {
				t.Fatal(err)
			}
			if _, err := st.db.InsertImage(ctx, &img); err != nil {
				t.Fatal(err)
			}
			sum, err := analyzeAll(ctx, st, eng, "", time.Time{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Analyzed != 1 || sum.Failed != 0 || sum.EXIFWritten != tc.written || sum.EXIFLeftOut != tc.leftOut {
				t.Errorf("summary %+v, want 1 analysed, %d written, %d left out", sum, tc.written, tc.leftOut)
			}
			md, err := st.db.Metadata(ctx, "u", "photo")
			if err != nil {
				t.Fatal(err)
			}
			exif, _ := md["exif"].(map[string]any)
			if md["title"] != "kept" || (exif["Make"] == "VitrineTestCam") != (tc.written == 1) || len(md) != 1+tc.written {
				t.Errorf("metadata %v", md)
			}
		})
	}
}
