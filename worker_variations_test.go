package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// TestVariationsConfig: the policy of which images get variations and at
// which scales, its checks, and the builder's own defaults (not the blob
// queue's).
func TestVariationsConfig(t *testing.T) {
	off := false
	t.Run("Validate", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cfg  VariationsConfig
			ok   bool
		}{
			{"zero", VariationsConfig{}, true},
			{"scales", VariationsConfig{Scales: []int{8, 4}}, true},
			{"scale 3", VariationsConfig{Scales: []int{2, 3}}, false},
			{"negative width", VariationsConfig{MinWidth: -1}, false},
			{"negative interval", VariationsConfig{Interval: -time.Second}, false},
			{"retryMax under retryMin", VariationsConfig{RetryMin: time.Minute, RetryMax: time.Second}, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				if err := c.cfg.Validate(); (err == nil) != c.ok {
					t.Fatalf("Validate = %v; want ok %v", err, c.ok)
				}
			})
		}
	})
	t.Run("Wants", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cfg  VariationsConfig
			w, h int
			size int64
			want bool
		}{
			{"default, wide", VariationsConfig{}, 1024, 10, 1, true},
			{"default, high", VariationsConfig{}, 10, 2000, 1, true},
			{"default, small", VariationsConfig{}, 1023, 1023, 1 << 30, false},
			{"minBytes", VariationsConfig{MinBytes: 1000}, 10, 10, 1000, true},
			{"minWidth", VariationsConfig{MinWidth: 4000}, 3000, 2000, 1, false},
			{"off", VariationsConfig{Enabled: &off}, 4000, 3000, 1, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				if got := c.cfg.Wants(c.w, c.h, c.size); got != c.want {
					t.Fatalf("Wants(%d, %d, %d) = %v", c.w, c.h, c.size, got)
				}
			})
		}
	})
	t.Run("Ladder", func(t *testing.T) {
		for _, c := range []struct {
			scales []int
			want   string
		}{{nil, "[2 4 8]"}, {[]int{8, 4, 8}, "[4 8]"}} {
			if got := fmt.Sprint(VariationsConfig{Scales: c.scales}.Ladder()); got != c.want {
				t.Errorf("Ladder of %v = %s; want %s", c.scales, got, c.want)
			}
		}
	})
	t.Run("defaults", func(t *testing.T) {
		for _, c := range []struct {
			cfg  VariationsConfig
			want string
		}{
			{VariationsConfig{}, "10s 30s 30m0s"},
			{VariationsConfig{Interval: time.Minute, RetryMin: time.Hour}, "1m0s 1h0m0s 1h0m0s"},
		} {
			d := c.cfg.withDefaults()
			if got := fmt.Sprint(d.Interval, " ", d.RetryMin, " ", d.RetryMax); got != c.want {
				t.Errorf("withDefaults of %+v: interval, retries %s; want %s", c.cfg, got, c.want)
			}
		}
	})
}

// TestVariationBuilderPass: an upload the policy wants gets a job, and a
// pass of the builder's worker takes it and stores the copies at 1/2, 1/4
// and 1/8 (one job a pass: a second pass finds none); an upload it does
// not want gets no job; the running worker, woken, builds a later upload's.
func TestVariationBuilderPass(t *testing.T) {
	dir := t.TempDir()
	cfg, err := loadConfig("", dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStores(t.Context(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	eng, err := engine.New(cfg.Engine)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	b, err := newVariationBuilder(st, eng)
	if err != nil || b == nil {
		t.Fatalf("newVariationBuilder = %v, %v", b, err)
	}
	big := commitJPEG(t, st, b, "big", 1600, 1200)
	commitJPEG(t, st, b, "small", 400, 300)
	for _, want := range []int{1, 0} {
		if n, err := b.pass(t.Context()); err != nil || n != want {
			t.Fatalf("pass = %d, %v; want %d", n, err, want)
		}
	}
	vs, err := st.db.Variations(t.Context(), big)
	if err != nil || len(vs) != 3 || vs[0].Width != 200 || vs[2].Width != 800 {
		t.Fatalf("variations %+v, %v; want 200, 400 and 800 px", vs, err)
	}
	t.Run("worker", func(t *testing.T) {
		var ws workers
		ws.start(t.Context(), b.worker(slog.New(slog.NewTextHandler(io.Discard, nil))).run)
		defer ws.stop()
		later := commitJPEG(t, st, b, "later", 1600, 1200)
		b.Wake()
		deadline := time.Now().Add(10 * time.Second)
		for {
			vs, err := st.db.Variations(t.Context(), later)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) == 3 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("variations of an upload the running worker was woken for: %+v", vs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// commitJPEG stores a w x h JPEG as user u's image id, with a variation
// job when b wants one, as the API does.
func commitJPEG(t *testing.T, st *stores, b *variationBuilder, id string, w, h int) storage.Image {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	img := storage.Image{User: "u", Identifier: id, Size: int64(buf.Len()), Extension: "jpg", Mime: "image/jpeg",
		Width: w, Height: h, Checksum: id, BlobToken: storage.NewBlobToken()}
	res, err := st.db.Reserve(t.Context(), img.Key())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.blobs.Put(t.Context(), res.Key, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.CommitImage(t.Context(), &img, res, b.Wants(w, h, img.Size)); err != nil {
		t.Fatal(err)
	}
	return img
}
