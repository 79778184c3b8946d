package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"net/http"
	"strings"
	"testing"
	"time"
)

// goGuest is a Guest written in Go: it inverts the colours, or, with
// size=WxH, returns a solid image of that size. It exercises the engine's
// side of the guest contract (parameters before pixels, the RGBA copy in
// and out, size changes, the cache key); the WebAssembly side is tested in
// package filters and end to end.
type goGuest struct {
	hash  string
	calls int
}

func (g *goGuest) CheckParams(raw map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range raw {
		if k != "size" {
			return nil, fmt.Errorf("Unknown parameter(s): %s", k)
		}
		var w, h int
		v = strings.ToLower(v)
		if _, err := fmt.Sscanf(v, "%dx%d", &w, &h); err != nil {
			return nil, fmt.Errorf("Invalid value for size: %q", v)
		}
		out[k] = v
	}
	return out, nil
}

func (g *goGuest) TransformTo(_ context.Context, img *image.NRGBA, params map[string]string, _ map[string]any, emit func(*image.NRGBA) error) error {
	g.calls++
	if g.hash == "noop" {
		return nil
	}
	if s, ok := params["size"]; ok {
		var w, h int
		fmt.Sscanf(s, "%dx%d", &w, &h)
		out := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := range out.Pix {
			out.Pix[i] = 200
		}
		return emit(out)
	}
	out := image.NewNRGBA(img.Rect)
	for i, v := range img.Pix {
		if i%4 == 3 {
			out.Pix[i] = v
		} else {
			out.Pix[i] = 255 - v
		}
	}
	return emit(out)
}

func (g *goGuest) ContentHash() string { return g.hash }

// failingGuest fails like a timed-out filter does.
type failingGuest struct{ goGuest }

type guestErr struct{}

func (guestErr) Error() string         { return "Filter slow timed out" }
func (guestErr) HTTPStatus() int       { return http.StatusGatewayTimeout }
func (guestErr) PublicMessage() string { return "Filter slow timed out" }

func (f *failingGuest) TransformTo(context.Context, *image.NRGBA, map[string]string, map[string]any, func(*image.NRGBA) error) error {
	return guestErr{}
}

// staticGuests is a fixed set of guests.
type staticGuests map[string]Guest

func (s staticGuests) Guest(name string) (Guest, bool) { g, ok := s[name]; return g, ok }
func (s staticGuests) GuestNames() []string {
	var out []string
	for k := range s {
		out = append(out, k)
	}
	return out
}

func TestGuestInChain(t *testing.T) {
	e := newTestEngine(t, Config{})
	inv := &goGuest{hash: "h1"}
	e.Registry().SetGuests(staticGuests{"invert": inv, "solid": &goGuest{hash: "h2"}, "slow": &failingGuest{}, "border": &goGuest{},
		"noop": &goGuest{hash: "noop"}})
	src := source(t, 64, 48, "png", false)

	t.Run("mixed with native steps", func(t *testing.T) {
		plain := run(t, e, src, "png", Env{}, "crop:width=32,height=32,x=0,y=0")
		mixed := run(t, e, src, "png", Env{}, "crop:width=32,height=32,x=0,y=0", "invert", "border:width=2,height=2,color=000000")
		if mixed.Width != 36 || mixed.Height != 36 {
			t.Fatalf("size %dx%d, want 36x36", mixed.Width, mixed.Height)
		}
		want, got := pixel(t, plain.Data, 10, 10), pixel(t, mixed.Data, 12, 12)
		if !near(got, color.NRGBA{255 - want.R, 255 - want.G, 255 - want.B, 255}, 1) {
			t.Fatalf("pixel %v, want the inverse of %v", got, want)
		}
		if b := mustLoad(t, mixed.Data); b.Bands() != 3 {
			t.Fatalf("an opaque input came back with %d bands", b.Bands())
		}
	})
	t.Run("alpha is kept", func(t *testing.T) {
		res := run(t, e, source(t, 40, 40, "png", true), "png", Env{}, "invert")
		if p := pixel(t, res.Data, 5, 20); p.A != 0 {
			t.Fatalf("transparent band lost: %v", p)
		}
	})
	t.Run("a guest that writes nothing leaves three bands", func(t *testing.T) {
		res := run(t, e, src, "png", Env{}, "noop")
		if b := mustLoad(t, res.Data); b.Bands() != 3 || res.Width != 64 {
			t.Fatalf("%d bands, %dx%d", b.Bands(), res.Width, res.Height)
		}
	})
	t.Run("output of another size", func(t *testing.T) {
		res := run(t, e, src, "jpg", Env{}, "solid:size=7x300")
		if res.Width != 7 || res.Height != 300 {
			t.Fatalf("size %dx%d", res.Width, res.Height)
		}
	})
	t.Run("parameters checked before any pixel", func(t *testing.T) {
		calls := inv.calls
		_, err := e.ParseChain([]string{"thumbnail:width=10", "invert:colour=1"})
		var ee *Error
		if !errors.As(err, &ee) || ee.Kind != KindInvalid || ee.Msg != "invert: Unknown parameter(s): colour" {
			t.Fatalf("err = %v", err)
		}
		if inv.calls != calls {
			t.Fatal("the guest ran for an invalid chain")
		}
	})
	t.Run("native names win", func(t *testing.T) {
		res := run(t, e, src, "png", Env{}, "border:width=1,height=1")
		if res.Width != 66 {
			t.Fatalf("border ran as a guest: %dx%d", res.Width, res.Height)
		}
	})
	t.Run("cache key has the content hash and normalised parameters", func(t *testing.T) {
		a, _ := e.ParseChain([]string{"solid:size=2X3"})
		b, _ := e.ParseChain([]string{"solid:size=2x3"})
		if a.Key() != b.Key() || !strings.Contains(a.Key(), "solid@h2:size=2x3") {
			t.Fatalf("keys %q, %q", a.Key(), b.Key())
		}
	})
	t.Run("guest errors pass through", func(t *testing.T) {
		c, err := e.ParseChain([]string{"slow"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Process(context.Background(), src, Request{Chain: c, Format: "png"})
		var st interface{ HTTPStatus() int }
		if !errors.As(err, &st) || st.HTTPStatus() != 504 {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("described as wasm", func(t *testing.T) {
		for _, d := range e.Registry().Describe() {
			if d.Name == "invert" && d.Kind != "wasm" || d.Name == "border" && d.Kind != "native" {
				t.Fatalf("description %+v", d)
			}
		}
	})
	t.Run("unknown names stay unknown", func(t *testing.T) {
		if _, err := e.ParseChain([]string{"nope"}); err == nil || !strings.Contains(err.Error(), `"nope" not registered`) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestOpaque: one non-opaque pixel anywhere, in the word-wise part or the
// tail, makes the image not opaque; colour bytes of 0 never do.
func TestOpaque(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 15, 16, 17, 33, 100} {
		img := image.NewNRGBA(image.Rect(0, 0, n, 1))
		for i := range n {
			img.Pix[4*i+3] = 255
		}
		if !opaque(img) {
			t.Fatalf("%d opaque pixels: not opaque", n)
		}
		for i := range n {
			img.Pix[4*i+3] = 254
			if opaque(img) {
				t.Fatalf("%d pixels, pixel %d at alpha 254: opaque", n, i)
			}
			img.Pix[4*i+3] = 255
		}
	}
}

// idleBytesNow is the bytes of the pool's idle buffers.
func (p *pixelPool) idleBytesNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idleBytes
}

// TestPixelPool: buffers are reused, bounded, and a buffer handed to
// libvips in place goes back to the pool once libvips closes the image.
func TestPixelPool(t *testing.T) {
	var p pixelPool
	a, freeA, err := p.get(3 << 20)
	if err != nil {
		t.Fatal(err)
	}
	a[0], a[len(a)-1] = 1, 2
	freeA()
	freeA() // twice is harmless
	if got := p.idleBytesNow(); got != 3<<20 {
		t.Fatalf("idle %d bytes, want %d", got, 3<<20)
	}
	b, freeB, err := p.get(3<<20 - 100)
	if err != nil {
		t.Fatal(err)
	}
	if &b[0] != &a[0] {
		t.Fatal("a returned buffer of the same size class was not reused")
	}
	freeB()
	// Beyond the idle bound (configured) the least recently returned go.
	const maxIdle = 64 << 20
	p.configure(maxIdle, 0)
	var frees []func()
	for range maxIdle/(16<<20) + 2 {
		_, f, err := p.get(16 << 20)
		if err != nil {
			t.Fatal(err)
		}
		frees = append(frees, f)
	}
	for _, f := range frees {
		f()
	}
	if got := p.idleBytesNow(); got > maxIdle || got < maxIdle-(16<<20) {
		t.Fatalf("idle %d bytes; the bound is %d", got, maxIdle)
	}

	// The engine's pool: a guest output read in place returns its buffer
	// when the image is closed.
	before := pixels.idleBytesNow()
	out := image.NewNRGBA(image.Rect(0, 0, 700, 500))
	for i := range out.Pix {
		out.Pix[i] = byte(i)
	}
	ref, err := importGuestNRGBA(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Width() != 700 || ref.Height() != 500 || ref.Bands() != 4 {
		t.Fatalf("imported %dx%d, %d bands", ref.Width(), ref.Height(), ref.Bands())
	}
	got := make([]byte, len(out.Pix))
	if err := writeInto(ref, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, out.Pix) {
		t.Fatal("pixels differ after import")
	}
	held := pixels.idleBytesNow()
	ref.Close()
	if after := pixels.idleBytesNow(); after <= held && after <= before {
		t.Fatalf("closing the image returned no buffer: idle %d -> %d", held, after)
	}
}

// blockingGuest holds its call until release is closed, saying when it
// started.
type blockingGuest struct {
	goGuest
	started chan struct{}
	release chan struct{}
}

func (b *blockingGuest) TransformTo(ctx context.Context, img *image.NRGBA, params map[string]string, md map[string]any, emit func(*image.NRGBA) error) error {
	close(b.started)
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.goGuest.TransformTo(ctx, img, params, md, emit)
}

// TestGuestGivesUpItsSlot: with one pipeline slot, a render whose guest
// step is running (or waiting for its filter) does not hold it: a native
// render runs meanwhile, and the guest's render then finishes.
func TestGuestGivesUpItsSlot(t *testing.T) {
	e := newTestEngine(t, Config{Concurrency: 1})
	g := &blockingGuest{goGuest: goGuest{hash: "b"}, started: make(chan struct{}), release: make(chan struct{})}
	e.Registry().SetGuests(staticGuests{"block": g})
	src := source(t, 64, 48, "png", false)
	chain, err := e.ParseChain([]string{"thumbnail:width=32,height=32", "block"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.Process(context.Background(), src, Request{Chain: chain, Format: "png"})
		done <- err
	}()
	<-g.started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	native, err := e.ParseChain([]string{"thumbnail:width=16,height=16"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Process(ctx, src, Request{Chain: native, Format: "png"}); err != nil {
		t.Fatalf("native render while a guest step runs: %v (the guest holds the only slot)", err)
	}
	if running, _ := e.Load(); running != 0 {
		t.Fatalf("%d slots held while only a guest step runs", running)
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("guest render: %v", err)
	}
	if running, waiting := e.Load(); running != 0 || waiting != 0 {
		t.Fatalf("after both renders: %d slots held, %d waiting", running, waiting)
	}
}

// fullGuest says it has no room, as a filter whose queue is full does.
type fullGuest struct{ goGuest }

func (fullGuest) Reserve(ctx context.Context) (context.Context, func(), error) {
	return ctx, nil, guestErr{}
}

// reservingGuest records its reservations: when one was taken (and
// whether the source had been read by then), whether the call ran under
// it, and how many were released.
type reservingGuest struct {
	goGuest
	read                       *bool
	reserved, readFirst, under bool
	released                   int
}

type reservationKey struct{}

func (g *reservingGuest) Reserve(ctx context.Context) (context.Context, func(), error) {
	g.reserved, g.readFirst = true, *g.read
	return context.WithValue(ctx, reservationKey{}, g), func() { g.released++ }, nil
}

func (g *reservingGuest) TransformTo(ctx context.Context, img *image.NRGBA, params map[string]string, md map[string]any, emit func(*image.NRGBA) error) error {
	g.under = ctx.Value(reservationKey{}) == g
	return g.goGuest.TransformTo(ctx, img, params, md, emit)
}

// TestGuestReservesBeforeDecoding: a chain's first guest step reserves
// room before the source is read, runs under its reservation, and the
// reservation is released when the render ends, whether it rendered or
// failed to decode.
func TestGuestReservesBeforeDecoding(t *testing.T) {
	e := newTestEngine(t, Config{Concurrency: 1})
	read := false
	g := &reservingGuest{goGuest: goGuest{hash: "r"}, read: &read}
	e.Registry().SetGuests(staticGuests{"res": g})
	chain, err := e.ParseChain([]string{"thumbnail:width=32,height=32", "res", "res"})
	if err != nil {
		t.Fatal(err)
	}
	src := source(t, 64, 48, "png", false)
	info := Info{Mime: "image/png", Ext: "png", Width: 64, Height: 48}
	load := func(context.Context) ([]byte, error) { read = true; return src, nil }
	if _, err := e.ProcessSource(context.Background(), load, Request{Chain: chain, Format: "png", Source: info}); err != nil {
		t.Fatal(err)
	}
	if !g.reserved || g.readFirst || !g.under || g.released != 1 || g.calls != 2 {
		t.Fatalf("reserved %v (after the read: %v), call under it %v, released %d times, %d calls; want reserved before the read, released once, 2 calls",
			g.reserved, g.readFirst, g.under, g.released, g.calls)
	}
	read = false
	bad := func(context.Context) ([]byte, error) { read = true; return []byte("not an image"), nil }
	if _, err := e.ProcessSource(context.Background(), bad, Request{Chain: chain, Format: "png", Source: info}); err == nil {
		t.Fatal("a source that is not an image rendered")
	}
	if g.released != 2 || g.calls != 2 {
		t.Fatalf("after a failed decode: released %d times (want 2), %d calls (want 2)", g.released, g.calls)
	}
}

func TestGuestAdmitBeforeDecoding(t *testing.T) {
	e := newTestEngine(t, Config{Concurrency: 1})
	e.Registry().SetGuests(staticGuests{"full": &fullGuest{}})
	chain, err := e.ParseChain([]string{"full"})
	if err != nil {
		t.Fatal(err)
	}
	read := false
	load := func(context.Context) ([]byte, error) { read = true; return []byte("not an image"), nil }
	_, err = e.ProcessSource(context.Background(), load, Request{Chain: chain, Format: "png",
		Source: Info{Mime: "image/png", Ext: "png", Width: 10, Height: 10}})
	if !errors.As(err, new(guestErr)) || read {
		t.Fatalf("err = %v, source read %v; want the guest's refusal and no read", err, read)
	}
	if _, err := e.Process(context.Background(), []byte("not an image"), Request{Chain: chain, Format: "png",
		Source: Info{Mime: "image/png", Ext: "png", Width: 10, Height: 10}}); !errors.As(err, new(guestErr)) {
		t.Fatalf("Process: err = %v; want the guest's refusal", err)
	}
}
