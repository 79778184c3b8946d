package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
)

// minimalTransformation is the smallest module of ABI 1 a transformation
// can be: the marker vitrine_abi_v1 () -> (), a memory, and
// vitrine_transform () -> i32 returning 0 (no output).
var minimalTransformation = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x08, 0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f, // types: () -> (), () -> i32
	0x03, 0x03, 0x02, 0x00, 0x01, // functions of types 0 and 1
	0x05, 0x03, 0x01, 0x00, 0x01, // one memory of 1 page
	0x07, 0x2f, 0x03, // exports
	0x0e, 'v', 'i', 't', 'r', 'i', 'n', 'e', '_', 'a', 'b', 'i', '_', 'v', '1', 0x00, 0x00,
	0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
	0x11, 'v', 'i', 't', 'r', 'i', 'n', 'e', '_', 't', 'r', 'a', 'n', 's', 'f', 'o', 'r', 'm', 0x00, 0x01,
	0x0a, 0x09, 0x02, 0x02, 0x00, 0x0b, 0x04, 0x00, 0x41, 0x00, 0x0b, // code: nop; i32.const 0
}

// TestGuestDescribedAsNative: a loaded filter is described with the one
// parameter schema of native transformations, so GET /transformations
// shows a guest's int default as the number 6, not the string "6".
func TestGuestDescribedAsNative(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "shade")
	manifest := `{"name":"shade","version":"1","abi":1,"kind":"transformation","params":{
		"steps":{"type":"int","min":1,"max":10,"default":6},
		"mix":{"type":"number","default":0.50},
		"tint":{"type":"color","default":"#ABC"}}}`
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"filter.json": []byte(manifest), "filter.wasm": minimalTransformation} {
		if err := os.WriteFile(filepath.Join(folder, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fh, err := filters.New(context.Background(), filters.Config{Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	reg := engine.NewRegistry()
	reg.SetGuests(guestSource{h: fh})
	var got []byte
	for _, d := range reg.Describe() {
		if d.Name == "shade" {
			got, _ = json.Marshal(d)
		}
	}
	want := `{"name":"shade","kind":"wasm","params":[` +
		`{"name":"mix","type":"number","default":0.5},` +
		`{"name":"steps","type":"int","default":6,"min":1,"max":10},` +
		`{"name":"tint","type":"color","default":"aabbccff"}]}`
	if string(got) != want {
		t.Errorf("description\n%s\nwant\n%s\n(status %+v)", got, want, fh.Current().Status())
	}
}

// TestCanaryBucket checks the canary's choice per image: the same subject
// always lands in the same bucket, and 10,000 subjects split near the
// percent asked for.
func TestCanaryBucket(t *testing.T) {
	for _, percent := range []int{1, 10, 50, 90} {
		t.Run(fmt.Sprint(percent), func(t *testing.T) {
			n := 0
			for i := range 10000 {
				s := fmt.Sprintf("alice/%032x", i)
				b := canaryBucket(s)
				if b < 0 || b > 99 || canaryBucket(s) != b {
					t.Fatalf("bucket of %s: %d, then %d", s, b, canaryBucket(s))
				}
				if b < percent {
					n++
				}
			}
			if lo, hi := percent*100-200, percent*100+200; n < lo || n > hi {
				t.Fatalf("%d%% took %d of 10000 subjects", percent, n)
			}
		})
	}
}

func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{5 * mb, 64 * mb, 1175},  // 5 MB grows to 63.75 MB
		{0, 64 * mb, 6300},       // read as 1 MB
		{16 * mb, 64 * mb, 300},  // 16 MB grows to 64 MB
		{32 * mb, 64 * mb, 100},  // twice the live heap reaches the floor
		{200 * mb, 64 * mb, 100}, // never below Go's default
	} {
		if got := gcPercentFor(c.live, c.floor); got != c.want {
			t.Errorf("gcPercentFor(%d MB, %d MB) = %d, want %d", c.live/mb, c.floor/mb, got, c.want)
		}
	}
}

func TestGuestsBusy(t *testing.T) {
	var started uint64
	var running int
	busy := guestsBusy(func() (uint64, int) { return started, running })
	for i, c := range []struct {
		started uint64
		running int
		want    bool
	}{
		{0, 0, false},
		{1, 1, true},  // a call runs
		{1, 1, true},  // still
		{3, 0, true},  // two more started and ended between questions
		{3, 0, false}, // none since
	} {
		started, running = c.started, c.running
		if got := busy(); got != c.want {
			t.Errorf("question %d (started %d, running %d): busy = %v, want %v", i, c.started, c.running, got, c.want)
		}
	}
}

func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waitGOGC waits until GOGC satisfies ok, for at most 10 s.
func waitGOGC(t *testing.T, what string, ok func(uint64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(gogc()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOGC still %d", what, gogc())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPaceGC: the floor raises GOGC while guests are busy, gives Go's
// default back when they are not and when the server stops; GOGC in the
// environment switches it off.
func TestPaceGC(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { paceGC(ctx, 4<<30, busy.Load); close(done) }()
	waitGOGC(t, "busy, 4 GB floor", func(p uint64) bool { return p > 100 })
	busy.Store(false)
	waitGOGC(t, "idle", func(p uint64) bool { return p == 100 })
	busy.Store(true)
	waitGOGC(t, "busy again", func(p uint64) bool { return p > 100 })
	cancel()
	<-done
	if got := gogc(); got != 100 {
		t.Errorf("GOGC after the server stopped = %d, want 100", got)
	}

	t.Setenv("GOGC", "100")
	paceGC(t.Context(), 4<<30, func() bool { return true }) // returns at once
	if got := gogc(); got != 100 {
		t.Errorf("GOGC with GOGC set = %d, want 100", got)
	}
}
