package filters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// TestHostileGuests is the hostile-guest kit: each misbehaving guest is
// stopped with a clear error of the right kind, its instance is thrown
// away, and the same host then serves a well-behaved filter as before.
func TestHostileGuests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short := map[string]any{"limits": map[string]any{"timeoutMs": 300, "memoryMB": 64, "instances": 2}}
	// Guests that fail on their own get a generous timeout, so that a
	// loaded machine does not turn their failure into a timeout.
	generous := map[string]any{"limits": map[string]any{"timeoutMs": 10000, "memoryMB": 64, "instances": 2}}
	kit(t, dir, "gopanic", KindTransformation, "panic", generous)
	kit(t, dir, "goexit", KindTransformation, "exit", generous)
	kit(t, dir, "goloop", KindTransformation, "loop", short)
	kit(t, dir, "gohog", KindTransformation, "hog", generous)
	kit(t, dir, "gohuge", KindTransformation, "huge", short)
	kit(t, dir, "gofail", KindTransformation, "fail", short)
	kit(t, dir, "invert", KindTransformation, "invert", nil)
	writeFilter(t, dir, "trap", abiModule(append(opUnreachable, opReturn0...)).bytes(), map[string]any{"kind": "transformation"})
	writeFilter(t, dir, "spin", abiModule(opLoop).bytes(), map[string]any{"kind": "transformation", "limits": map[string]any{"timeoutMs": 100}})
	writeFilter(t, dir, "grow", abiModule(opGrowForever).bytes(), map[string]any{"kind": "transformation", "limits": map[string]any{"memoryMB": 2}})
	h := newHost(t, dir, nil)

	cases := []struct {
		filter string
		kind   Kind
		msg    string
		cause  string
	}{
		{"trap", KindFailed, "Filter trap failed", "unreachable"},
		{"spin", KindTimeout, "Filter spin timed out", ""},
		{"grow", KindFailed, "Filter grow failed", "unreachable"},
		{"gopanic", KindFailed, "Filter gopanic failed", "unreachable"},
		{"goexit", KindFailed, "Filter goexit failed", "exited with code 3"},
		{"goloop", KindTimeout, "Filter goloop timed out", ""},
		{"gohog", KindFailed, "Filter gohog failed", "wasm"},
		{"gohuge", KindFailed, "Filter gohuge failed", "returned -5"},
		{"gofail", KindFailed, "Filter gofail failed", "returned 7"},
	}
	for _, c := range cases {
		t.Run(c.filter, func(t *testing.T) {
			tr, ok := h.Current().Transformation(c.filter)
			if !ok {
				t.Fatalf("not loaded: %+v", h.Current().Status())
			}
			// Twice: the second call gets a fresh instance and fails the same way.
			for i := 0; i < 2; i++ {
				_, err := tr.Transform(context.Background(), testImage(8, 8, 1), nil, nil)
				var fe *Error
				if !errors.As(err, &fe) || fe.Kind != c.kind || fe.Msg != c.msg || !strings.Contains(err.Error(), c.cause) {
					t.Fatalf("call %d: err = %v, want %v %q (cause %q)", i, err, c.kind, c.msg, c.cause)
				}
			}
			st := tr.Stats()
			if st.Calls != 2 || st.Errors+st.Timeouts != 2 {
				t.Fatalf("stats = %+v", st)
			}
			if c.kind != KindFailed || c.filter == "gohuge" || c.filter == "gofail" {
				return
			}
			if st.Instances != 0 {
				t.Fatalf("%d instances left after crashes; a crashed instance must be thrown away", st.Instances)
			}
		})
	}
	// The host still serves a good filter, and the timeouts did not leave
	// goroutines or instances behind.
	tr, _ := h.Current().Transformation("invert")
	if _, err := tr.Transform(context.Background(), testImage(8, 8, 1), nil, nil); err != nil {
		t.Fatalf("healthy filter after the hostile ones: %v", err)
	}
	for _, name := range []string{"spin", "goloop"} {
		tr, _ := h.Current().Transformation(name)
		if n := tr.Stats().Instances; n != 0 {
			t.Errorf("%s: %d instances after timeouts", name, n)
		}
	}
}

// TestTimeoutIsPerCall shows that a call's own context ends it too (the
// client went away): the error is the context's, not a filter timeout.
func TestTimeoutIsPerCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "spin", abiModule(opLoop).bytes(), map[string]any{"kind": "transformation", "limits": map[string]any{"timeoutMs": 60000}})
	h := newHost(t, dir, nil)
	tr, _ := h.Current().Transformation("spin")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := tr.Transform(ctx, testImage(1, 1, 1), nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if tr.Stats().Calls != 0 {
		t.Fatalf("a call the client abandoned must not count: %+v", tr.Stats())
	}
}

// TestAdmission: a filter's instances and queue bound its calls. With one
// instance busy looping and a queue of one, a second call waits its
// queueMs and is turned away busy (503, Retry-After), a third finding the
// queue full is turned away at once, and the first times out; never more
// than one instance exists.
func TestAdmission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "spin", abiModule(opLoop).bytes(), map[string]any{"kind": "transformation",
		"limits": map[string]any{"timeoutMs": 1000, "instances": 1, "queue": 1, "queueMs": 200}})
	h := newHost(t, dir, nil)
	tr, _ := h.Current().Transformation("spin")
	p := h.Current().filters["spin"].pool
	call := func() error { _, err := tr.Transform(context.Background(), testImage(1, 1, 1), nil, nil); return err }
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- call() }()
	waitFor(t, "the first call to run", func() bool { return len(p.slots) == 1 })
	go func() { second <- call() }()
	waitFor(t, "the second call to queue", func() bool { return p.queued() == 1 })
	if started, running := h.GuestCalls(); started != 1 || running != 1 {
		t.Fatalf("GuestCalls with one call running and one queued = %d started, %d running; want 1, 1", started, running)
	}
	wantBusy := func(what string, err error, cause error) {
		t.Helper()
		var fe *Error
		if !errors.As(err, &fe) || fe.Kind != KindBusy || fe.HTTPStatus() != 503 || fe.RetryAfter() != time.Second ||
			fe.PublicMessage() != "Filter spin is busy; try again later" || !errors.Is(err, cause) {
			t.Fatalf("%s: err = %v, want busy (503, Retry-After 1s) because %v", what, err, cause)
		}
	}
	_, _, err := tr.Reserve(context.Background())
	wantBusy("Reserve with the queue full", err, errQueueFull)
	wantBusy("a call finding the queue full", call(), errQueueFull)
	wantBusy("a call that waited its queueMs", <-second, errWaited)
	if err := <-first; !errors.Is(err, ErrTimeout) {
		t.Fatalf("the running call: err = %v, want a timeout", err)
	}
	if n := tr.Stats().Instances; n > 1 {
		t.Fatalf("%d instances, the limit is 1", n)
	}
	if st := tr.Stats(); st.Busy != 3 || st.Timeouts != 1 || st.Waiting != 0 {
		t.Fatalf("stats = %+v, want 3 busy (Reserve's refusal counts), 1 timeout, none waiting", st)
	}
	if started, running := h.GuestCalls(); started != 1 || running != 0 {
		t.Fatalf("GuestCalls after the calls = %d started, %d running; want 1, 0", started, running)
	}
	runtime.GC()
}

// TestReserve: a reservation holds an instance of its filter until the
// filter's next call under its context uses it (that call does not wait)
// or it is released; it waits and fails as a call's wait does; a release
// after the call, or a second release, gives nothing back twice; another
// filter's call does not take it.
func TestReserve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "quick", abiModule(opReturn0).bytes(), map[string]any{"kind": "transformation",
		"limits": map[string]any{"timeoutMs": 1000, "instances": 1, "queue": 1, "queueMs": 200}})
	writeFilter(t, dir, "other", abiModule(opReturn0).bytes(), map[string]any{"kind": "transformation"})
	h := newHost(t, dir, nil)
	tr, _ := h.Current().Transformation("quick")
	other, _ := h.Current().Transformation("other")
	p := h.Current().filters["quick"].pool
	img := testImage(2, 2, 1)

	rctx, release, err := tr.Reserve(context.Background())
	if err != nil {
		t.Fatalf("Reserve with the filter idle: %v", err)
	}
	if len(p.slots) != 1 {
		t.Fatalf("%d slots taken after Reserve, want 1", len(p.slots))
	}
	// The reservation holds the only instance: a call without it queues
	// and is turned away when its queueMs runs out.
	if _, err := tr.Transform(context.Background(), img, nil, nil); !errors.Is(err, errWaited) {
		t.Fatalf("a call beside the reservation: err = %v, want busy after its queue wait", err)
	}
	// Another filter's call under the context neither uses nor waits for it.
	if _, err := other.Transform(rctx, img, nil, nil); err != nil {
		t.Fatalf("another filter's call under the reservation: %v", err)
	}
	if len(p.slots) != 1 {
		t.Fatalf("another filter's call took the reservation")
	}
	// A second Reserve waits in the queue and gets the slot once the first
	// is released.
	second := make(chan error, 1)
	var release2 func()
	go func() {
		var err error
		_, release2, err = tr.Reserve(context.Background())
		second <- err
	}()
	waitFor(t, "the second Reserve to queue", func() bool { return p.queued() == 1 })
	release()
	if err := <-second; err != nil {
		t.Fatalf("the second Reserve after the first was released: %v", err)
	}
	release() // again: must not give back the second's slot
	if len(p.slots) != 1 {
		t.Fatalf("%d slots taken after a second release of the first reservation, want 1 (the second's)", len(p.slots))
	}
	release2()
	if len(p.slots) != 0 {
		t.Fatalf("%d slots taken after both releases", len(p.slots))
	}

	// Used by the call under its context, which does not wait even though
	// the queue is full; the release after it gives nothing back.
	rctx, release, err = tr.Reserve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.waiting.Add(int32(p.limits.queue)) // the queue full: a call that had to wait would be busy
	_, err = tr.Transform(rctx, img, nil, nil)
	p.waiting.Add(-int32(p.limits.queue))
	if err != nil {
		t.Fatalf("the call under the reservation: %v", err)
	}
	if len(p.slots) != 0 {
		t.Fatalf("%d slots taken after the reserved call returned", len(p.slots))
	}
	release()
	if len(p.slots) != 0 {
		t.Fatalf("the release after the call gave a slot back twice")
	}
	// A second call under the same context waits like any other.
	if _, err := tr.Transform(rctx, img, nil, nil); err != nil {
		t.Fatalf("a second call under a used reservation: %v", err)
	}
	if st := tr.Stats(); st.Calls != 3 || st.Busy != 1 {
		t.Fatalf("stats = %+v, want 3 calls, 1 busy", st)
	}
}

// waitFor polls cond until it holds (failing after 10 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCommandModuleRefused is the hostile-guest kit's command module: a Go
// guest built without -buildmode=c-shared runs main from _start and exits,
// which closes the instance. Check and the host refuse it at load with a
// message that says how to build a reactor, instead of pooling a closed
// instance that would crash the process on the first call.
func TestCommandModuleRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fdir := writeFilter(t, dir, "command", commandGuest(t, "kit"), map[string]any{"kind": "transformation"})
	_, err := Check(context.Background(), Config{Logger: quietLogger()}, fdir)
	if !errors.Is(err, ErrLoad) || !errors.Is(err, errCommand) || !strings.Contains(err.Error(), "-buildmode=c-shared") {
		t.Fatalf("Check: err = %v, want a refusal naming -buildmode=c-shared", err)
	}
	h := newHost(t, dir, nil)
	if _, ok := h.Current().Transformation("command"); ok {
		t.Fatal("a command module was loaded")
	}
	st := h.Current().Status()
	if len(st) != 1 || !strings.Contains(st[0].Error, "reactor") {
		t.Fatalf("status = %+v, want the load refusal", st)
	}
}

// TestClosedIdleInstanceReplaced shows that the pool never hands out an
// instance that closed while idle: it is thrown away and a fresh one runs
// the call.
func TestClosedIdleInstanceReplaced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kit(t, dir, "invert", KindTransformation, "invert", nil)
	h := newHost(t, dir, nil)
	f := h.Current().filters["invert"]
	f.pool.mu.Lock()
	for _, inst := range f.pool.idle {
		_ = inst.mod.Close(context.Background())
	}
	n := len(f.pool.idle)
	f.pool.mu.Unlock()
	if n == 0 {
		t.Fatal("no idle instance after load")
	}
	tr, _ := h.Current().Transformation("invert")
	for i := 0; i < 2; i++ {
		if _, err := tr.Transform(context.Background(), testImage(8, 8, 1), nil, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := tr.Stats().Instances; n != 1 {
		t.Fatalf("%d instances, want the one fresh instance", n)
	}
}

// TestCloseWaitsForCalls shows that closing the host lets a running call
// end the way it would have (here at its timeout) instead of pulling the
// runtime from under it.
func TestCloseWaitsForCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "spin", abiModule(opLoop).bytes(), map[string]any{"kind": "transformation", "limits": map[string]any{"timeoutMs": 500}})
	h := newHost(t, dir, nil)
	f := h.Current().filters["spin"]
	tr, _ := h.Current().Transformation("spin")
	errs := make(chan error, 1)
	go func() { _, err := tr.Transform(context.Background(), testImage(1, 1, 1), nil, nil); errs <- err }()
	for {
		f.mu.Lock()
		n := f.active
		f.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want the call's own timeout", err)
	}
}

// TestCallErrorByCause shows that a failed call is classified by its error,
// not by the clock: a trap after the call's deadline passed is a failure,
// the runtime's deadline exit a timeout.
func TestCallErrorByCause(t *testing.T) {
	t.Parallel()
	f := &Filter{manifest: &Manifest{Name: "x"}}
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"trap", errors.New("wasm error: unreachable"), KindFailed},
		{"exit", sys.NewExitError(3), KindFailed},
		{"deadline exit", sys.NewExitError(sys.ExitCodeDeadlineExceeded), KindTimeout},
		{"pool wait", context.DeadlineExceeded, KindTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := f.callError(context.Background(), c.err); !isKind(err, c.want) {
				t.Fatalf("err = %v, want kind %v", err, c.want)
			}
		})
	}
}

// TestLogFloodBounded shows that a guest logging without bound (1000 lines
// of 1 MB in one call) writes at most maxLogLines lines of at most
// maxLogBytes each, then one line saying how many were dropped.
func TestLogFloodBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kit(t, dir, "flood", KindTransformation, "logFlood", map[string]any{"limits": map[string]any{"timeoutMs": 10000}})
	var buf lockedBuffer
	h := newHost(t, dir, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&buf, nil)) })
	tr, _ := h.Current().Transformation("flood")
	if _, err := tr.Transform(context.Background(), testImage(1, 1, 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	var guest, dropped int
	for _, line := range strings.Split(buf.String(), "\n") {
		switch {
		case strings.Contains(line, "dropped=900"):
			dropped++
		case strings.Contains(line, "xxxx"):
			guest++
			if len(line) > maxLogBytes+200 {
				t.Fatalf("a log line of %d bytes; lines are cut at %d", len(line), maxLogBytes)
			}
		}
	}
	if guest != maxLogLines || dropped != 1 {
		t.Fatalf("%d guest lines and %d drop notes, want %d and 1", guest, dropped, maxLogLines)
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sleb is the signed LEB128 encoding of v (i64.const immediates).
func sleb(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// opSleep sleeps ns on the monotonic clock through WASI poll_oneoff
// (imported as function 0), forever: the subscription is written at 0,
// the event at 64, the event count at 128.
func opSleep(ns int64) []byte {
	b := []byte{0x03, 0x40}                                 // loop
	b = append(b, 0x41, 0x10, 0x41, 0x01, 0x36, 0x02, 0x00) // [16] = clock id 1 (monotonic)
	b = append(b, 0x41, 0x18, 0x42)                         // [24] = timeout
	b = append(b, sleb(ns)...)
	b = append(b, 0x37, 0x03, 0x00)
	b = append(b, 0x41, 0x00, 0x41, 0xc0, 0x00, 0x41, 0x01, 0x41, 0x80, 0x01, 0x10, 0x00, 0x1a) // poll_oneoff(0, 64, 1, 128); drop
	return append(b, 0x0c, 0x00, 0x0b, 0x41, 0x00)                                              // br 0; end; i32.const 0
}

var importPollOneoff = wasmImport{module: "wasi_snapshot_preview1", name: "poll_oneoff",
	params: []byte{tI32, tI32, tI32, tI32}, results: []byte{tI32}}

// TestClockSleepEndsAtDeadline: a guest with the clock capability that
// sleeps 20 s at a time is stopped at its 300 ms timeout (504), not after
// its sleep; and so is Close, which waits for running calls.
func TestClockSleepEndsAtDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "sleeper", abiModule(opSleep(20e9), importPollOneoff).bytes(), map[string]any{"kind": "transformation",
		"capabilities": []string{"clock"}, "limits": map[string]any{"timeoutMs": 300}})
	h := newHost(t, dir, func(c *Config) { c.Allow = []string{CapClock} })
	tr, ok := h.Current().Transformation("sleeper")
	if !ok {
		t.Fatalf("not loaded: %+v", h.Current().Status())
	}
	start := time.Now()
	_, err := tr.Transform(context.Background(), testImage(1, 1, 1), nil, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	// The bound is the sleep's, not a speed target: without the deadline
	// the call returns after 20 s.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the call took %s: the sleep outlived the timeout", d)
	}
	go func() { _, _ = tr.Transform(context.Background(), testImage(1, 1, 1), nil, nil) }()
	waitFor(t, "a sleeping call", func() bool { return tr.Stats().Instances > 0 && len(h.Current().filters["sleeper"].pool.slots) == 1 })
	start = time.Now()
	h.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Close took %s with a sleeping guest", d)
	}
}

// opGrowBy grows memory by pages once and returns 0.
func opGrowBy(pages int64) []byte {
	return append(append([]byte{0x41}, sleb(pages)...), 0x40, 0x00, 0x1a, 0x41, 0x00)
}

// TestMemoryGivenBack: an instance whose memory grew past retainMemoryMB
// is closed after its call instead of being kept; one that did not is kept,
// and closed once idle for idleTimeout.
func TestMemoryGivenBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFilter(t, dir, "big", abiModule(opGrowBy(160)).bytes(), map[string]any{"kind": "transformation"})  // +10 MiB
	writeFilter(t, dir, "small", abiModule(opGrowBy(16)).bytes(), map[string]any{"kind": "transformation"}) // +1 MiB, once
	h := newHost(t, dir, func(c *Config) { c.RetainMemoryMB = 4; c.IdleTimeout = 300 * time.Millisecond })
	for _, c := range []struct {
		name string
		kept int
	}{{"big", 0}, {"small", 1}} {
		tr, _ := h.Current().Transformation(c.name)
		if _, err := tr.Transform(context.Background(), testImage(1, 1, 1), nil, nil); err != nil {
			t.Fatal(err)
		}
		if n := tr.Stats().Instances; n != c.kept {
			t.Fatalf("%s: %d instances after one call, want %d", c.name, n, c.kept)
		}
	}
	small, _ := h.Current().Transformation("small")
	waitFor(t, "the idle instance to be closed", func() bool { return small.Stats().Instances == 0 })
}

// TestStatsFlood is the hostile guest that floods GET /stats with stats_set:
// many names, large values, many values that add up. Each limit answers
// ERR_LIMIT, what was set within the limits is kept, and what one filter
// adds to the response stays under maxStatBytes.
func TestStatsFlood(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		count, size int
		ok          int // the first ok calls answer 0, the rest ERR_LIMIT
	}{
		{"many names", 300, 10, maxStatNames},
		{"huge values", 20, 1 << 20, 0},
		{"a value at the limit", 1, maxStatValueBytes, 1},
		{"a value one byte past it", 1, maxStatValueBytes + 1, 0},
		{"values that add up", 10, 60 << 10, maxStatBytes / (60 << 10)},
		{"small values past the total", 256, 1100, maxStatBytes / 1100},
	}
	specs := map[string][2]any{}
	for i, c := range cases {
		for _, report := range []bool{false, true} {
			specs[fmt.Sprintf("flood%d-%t", i, report)] = [2]any{"statsFlood", map[string]any{"events": []string{"stats.get"},
				"limits": map[string]any{"timeoutMs": 10000}, "settings": map[string]any{"count": c.count, "size": c.size, "report": report}}}
		}
	}
	set := loadListeners(t, specs)
	byName := map[string]Listener{}
	for _, l := range set.Listeners() {
		byName[l.Name()] = l
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var codes []int32
			msg := rejection(t, byName[fmt.Sprintf("flood%d-true", i)].Handle(context.Background(), &recEvent{name: "stats.get"}))
			if err := json.Unmarshal([]byte(msg), &codes); err != nil {
				t.Fatal(err)
			}
			for j, code := range codes {
				if want := map[bool]int32{true: 0, false: errLimit}[j < c.ok]; code != want {
					t.Fatalf("stats_set %d of %d answered %d, want %d (the first %d fit)", j, c.count, code, want, c.ok)
				}
			}
			name := fmt.Sprintf("flood%d-false", i)
			ev := &recEvent{name: "stats.get"}
			if err := byName[name].Handle(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(ev.stats[name])
			if len(ev.stats[name]) != c.ok || len(ev.stats) > 1 {
				t.Fatalf("%d values kept, want %d (stats of %d filters)", len(ev.stats[name]), c.ok, len(ev.stats))
			}
			// The values, plus at most 64 bytes of name and quotes each.
			if limit := maxStatBytes + maxStatNames*(64+4); len(b) > limit {
				t.Fatalf("the filter's stats are %d bytes, over %d", len(b), limit)
			}
		})
	}
}

// TestStatsSetRules checks stats_set's codes and what it keeps: a bad name
// or value is ERR_INVALID, a value whose encoding in GET /stats passes the
// limit ERR_LIMIT, stats_set outside stats.get ERR_UNAVAILABLE; a value
// set twice keeps the last, and numbers stay exact.
func TestStatsSetRules(t *testing.T) {
	t.Parallel()
	escaped := `"` + strings.Repeat("<", 20000) + `"` // 20 KB here, 120 KB escaped in GET /stats
	pairs := [][2]string{
		{"ok", `{"a": [1, 2]}`},
		{"big.number", `9007199254740993`},
		{"twice", `1`},
		{"twice", `2`},
		{"bad name", `1`},
		{"", `1`},
		{strings.Repeat("n", 65), `1`},
		{"notJSON", `{`},
		{"twoValues", `1 2`},
		{"badUTF8", "<invalid utf-8>"},
		{"escaped", escaped},
	}
	wantCodes := []int32{0, 0, 0, 0, errInvalid, errInvalid, errInvalid, errInvalid, errInvalid, errInvalid, errLimit}
	// A generous timeout: escaping 20 KB under -race on a loaded machine,
	// at the guests' lower CPU priority, can take more than the default.
	generous := map[string]any{"timeoutMs": 20000}
	set := loadListeners(t, map[string][2]any{
		"rules":       {"statsSet", map[string]any{"settings": map[string]any{"set": pairs}, "limits": generous}},
		"rulesReport": {"statsSet", map[string]any{"settings": map[string]any{"set": pairs, "report": true}, "limits": generous}},
	})
	byName := map[string]Listener{}
	for _, l := range set.Listeners() {
		byName[l.Name()] = l
	}
	cases := []struct {
		event string
		want  []int32
	}{
		{"stats.get", wantCodes},
		{"stats.head", slices.Repeat([]int32{errUnavailable}, len(pairs))},
		{"images.post", slices.Repeat([]int32{errUnavailable}, len(pairs))},
	}
	for _, c := range cases {
		t.Run(c.event, func(t *testing.T) {
			var got []int32
			msg := rejection(t, byName["rulesReport"].Handle(context.Background(), &recEvent{name: c.event}))
			if err := json.Unmarshal([]byte(msg), &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("codes %v, want %v (for %v)", got, c.want, pairs)
			}
		})
	}
	ev := &recEvent{name: "stats.get"}
	if err := byName["rules"].Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ev.stats)
	if want := `{"rules":{"big.number":9007199254740993,"ok":{"a":[1,2]},"twice":2}}`; string(b) != want {
		t.Fatalf("stats %s, want %s", b, want)
	}
}

// TestStatsNamespaced is the hostile guest that tries to write another
// filter's statistics: whatever name it gives stats_set, the value lands
// under its own filter's name, in either order of the two listeners.
func TestStatsNamespaced(t *testing.T) {
	t.Parallel()
	set := loadListeners(t, map[string][2]any{
		"victim": {"statsSet", map[string]any{"settings": map[string]any{"set": [][2]string{{"note", `"mine"`}}}}},
		"spoofer": {"statsSet", map[string]any{"settings": map[string]any{"set": [][2]string{
			{"victim", `{"note":"theirs"}`}, {"victim.note", `"theirs"`}, {"note", `"theirs"`}}}}},
	})
	byName := map[string]Listener{}
	for _, l := range set.Listeners() {
		byName[l.Name()] = l
	}
	for _, order := range [][]string{{"victim", "spoofer"}, {"spoofer", "victim"}} {
		t.Run(strings.Join(order, " then "), func(t *testing.T) {
			ev := &recEvent{name: "stats.get"}
			for _, name := range order {
				if err := byName[name].Handle(context.Background(), ev); err != nil {
					t.Fatal(err)
				}
			}
			b, _ := json.Marshal(ev.stats)
			want := `{"spoofer":{"note":"theirs","victim":{"note":"theirs"},"victim.note":"theirs"},"victim":{"note":"mine"}}`
			if string(b) != want {
				t.Fatalf("stats %s, want %s", b, want)
			}
		})
	}
}
