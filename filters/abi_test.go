package filters

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The tests of this file pin the behaviours wasm-sdk/ABI.md states in
// sections 4 and 5 beyond the codes of single host functions: how a call
// ends, what each event allows, what a transformation reads, how
// metadata_set combines, the start deadline.

// i32c is the instruction i32.const v.
func i32c(v int32) []byte {
	out := []byte{0x41}
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v == 0 && b&0x40 == 0 || v == -1 && b&0x40 != 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// Instructions of the call-outcome modules, whose imports are reject
// (function 0) and proc_exit (function 1).
var (
	callImports = []wasmImport{
		{module: hostModule, name: "reject", params: []byte{tI32, tI32, tI32}, results: []byte{tI32}},
		{module: wasiModule, name: "proc_exit", params: []byte{tI32}},
	}
	// opReject403 and opReject451 reject with an empty message.
	opReject403 = concat(i32c(403), i32c(0), i32c(0), []byte{0x10, 0x00, 0x1a})
	opReject451 = concat(i32c(451), i32c(0), i32c(0), []byte{0x10, 0x00, 0x1a})
	opExit0     = concat(i32c(0), []byte{0x10, 0x01})
	opSpin      = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b} // loop br 0 end
)

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// callModule is a module of kind whose export runs body.
func callModule(kind string, body []byte) []byte {
	m := abiModule(body, callImports...)
	if kind == KindListener {
		m.funcs[1].export = "vitrine_on_event"
	}
	return m.bytes()
}

// TestCallOutcomes is ABI.md section 4's table of how a call ends, for a
// transformation, a fatal listener and an optional one: the status and
// message the request gets, and whether the instance is thrown away. A
// trap, a timeout or proc_exit wins over an earlier reject; reject wins
// over the export's result; of two rejects the last wins.
func TestCallOutcomes(t *testing.T) {
	t.Parallel()
	type want struct {
		status int // 0: the request goes on
		msg    string
	}
	failedW, timedOutW := want{500, "Filter %s failed"}, want{504, "Filter %s timed out"}
	cases := []struct {
		name     string
		body     []byte
		fatal    want // a transformation or a fatal listener
		optional want // a listener with fatal: false
		thrown   bool // the instance is thrown away
	}{
		{"success", i32c(0), want{}, want{}, false},
		{"non-zero result", i32c(7), failedW, want{}, false},
		{"trap", concat(opUnreachable, i32c(0)), failedW, want{}, true},
		{"timeout", concat(opSpin, i32c(0)), timedOutW, want{}, true},
		{"proc_exit(0)", concat(opExit0, i32c(0)), failedW, want{}, true},
		{"reject", concat(opReject403, i32c(0)), want{403, ""}, want{403, ""}, false},
		{"reject then non-zero", concat(opReject403, i32c(1)), want{403, ""}, want{403, ""}, false},
		{"reject twice", concat(opReject403, opReject451, i32c(0)), want{451, ""}, want{451, ""}, false},
		{"reject then trap", concat(opReject403, opUnreachable, i32c(0)), failedW, want{}, true},
		{"reject then timeout", concat(opReject403, opSpin, i32c(0)), timedOutW, want{}, true},
		{"reject then proc_exit", concat(opReject403, opExit0, i32c(0)), failedW, want{}, true},
	}
	dir := t.TempDir()
	limits := map[string]any{"timeoutMs": 200, "instances": 1}
	for _, c := range cases {
		name := strings.ReplaceAll(strings.ReplaceAll(c.name, " ", "-"), "(0)", "")
		writeFilter(t, dir, "t-"+name, callModule(KindTransformation, c.body), map[string]any{"kind": KindTransformation, "limits": limits})
		writeFilter(t, dir, "f-"+name, callModule(KindListener, c.body), map[string]any{"kind": KindListener, "events": []string{"*"}, "limits": limits})
		writeFilter(t, dir, "o-"+name, callModule(KindListener, c.body), map[string]any{"kind": KindListener, "events": []string{"*"}, "limits": limits, "fatal": false})
	}
	var logs lockedBuffer
	set := newHost(t, dir, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }).Current()
	listeners := map[string]Listener{}
	for _, l := range set.Listeners() {
		listeners[l.Name()] = l
	}
	for _, c := range cases {
		name := strings.ReplaceAll(strings.ReplaceAll(c.name, " ", "-"), "(0)", "")
		run := map[string]func() (Stats, error){
			"t-" + name: func() (Stats, error) {
				tr, ok := set.Transformation("t-" + name)
				if !ok {
					t.Fatalf("t-%s not loaded: %+v", name, set.Status())
				}
				_, err := tr.Transform(context.Background(), testImage(2, 2, 1), nil, nil)
				return tr.Stats(), err
			},
		}
		for _, prefix := range []string{"f-", "o-"} {
			l, ok := listeners[prefix+name]
			if !ok {
				t.Fatalf("%s%s not loaded: %+v", prefix, name, set.Status())
			}
			run[prefix+name] = func() (Stats, error) {
				err := l.Handle(context.Background(), &recEvent{name: "image.get"})
				return l.Stats(), err
			}
		}
		for filter, call := range run {
			t.Run(filter, func(t *testing.T) {
				t.Parallel()
				w := c.fatal
				if strings.HasPrefix(filter, "o-") {
					w = c.optional
				}
				st, err := call()
				var fe *Error
				switch {
				case w.status == 0 && err != nil:
					t.Fatalf("err = %v, want the request to go on", err)
				case w.status != 0 && (!errors.As(err, &fe) || fe.HTTPStatus() != w.status ||
					fe.PublicMessage() != strings.ReplaceAll(w.msg, "%s", filter)):
					t.Fatalf("err = %v, want %d %q", err, w.status, strings.ReplaceAll(w.msg, "%s", filter))
				}
				if thrown := st.Instances == 0; thrown != c.thrown {
					t.Fatalf("%d instances after the call; thrown away: %v, want %v", st.Instances, thrown, c.thrown)
				}
				if skipped := strings.Contains(logs.String(), "filter="+filter+" "); w.status == 0 && c.fatal.status != 0 && !skipped {
					t.Fatalf("the optional listener's failure was not logged: %s", logs.String())
				}
			})
		}
	}
}

// TestHostFunctionsPerEvent is ABI.md section 5's table of what each
// event allows a listener: body_read and body_write on images.post only,
// metadata_set on images.post, metadata.put and metadata.post, stats_set on
// stats.get; event_get, metadata_get and stats_add everywhere; a
// transformation's functions nowhere.
func TestHostFunctionsPerEvent(t *testing.T) {
	t.Parallel()
	set := loadListeners(t, map[string][2]any{"caps": {"caps", map[string]any{}}})
	l := set.Listeners()[0]
	for _, name := range EventNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ev := &recEvent{name: name, body: []byte("IMG1"), hasImage: true, md: map[string]any{"p": 0}}
			var got map[string]int32
			if err := json.Unmarshal([]byte(rejection(t, l.Handle(context.Background(), ev))), &got); err != nil {
				t.Fatal(err)
			}
			only := func(events ...string) int32 {
				for _, e := range events {
					if e == name {
						return 0
					}
				}
				return errUnavailable
			}
			want := map[string]int32{
				"body_read":    map[bool]int32{true: 4, false: errUnavailable}[name == "images.post"],
				"body_write":   only("images.post"),
				"metadata_get": int32(len(`{"p":0}`)),
				"metadata_set": only("images.post", "metadata.put", "metadata.post"),
				"stats_set":    only("stats.get"),
				"stats_add":    0,
				"param_get":    errUnavailable,
				"image_width":  errUnavailable,
				"pixels_read":  errUnavailable,
			}
			for fn, code := range want {
				if got[fn] != code {
					t.Errorf("%s answered %d, want %d", fn, got[fn], code)
				}
			}
			if got["event_get"] <= 0 {
				t.Errorf("event_get answered %d", got["event_get"])
			}
		})
	}
}

// TestTransformationReads pins what a transformation reads of its request:
// metadata_get answers the image's metadata (`{}` when it has none) and
// event_get ERR_UNAVAILABLE.
func TestTransformationReads(t *testing.T) {
	t.Parallel()
	tr := loadKit(t, "metadata", nil)
	cases := []struct {
		name string
		md   map[string]any
		want string
	}{
		{"metadata", map[string]any{"title": "x", "n": 1}, `{"n":1,"title":"x"}`},
		{"no metadata", nil, `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tr.Transform(context.Background(), testImage(1, 1, 1), nil, c.md)
			var got struct {
				Metadata     string
				MetadataCode int32
				EventCode    int32
			}
			if err := json.Unmarshal([]byte(rejection(t, err)), &got); err != nil {
				t.Fatal(err)
			}
			if got.Metadata != c.want || got.MetadataCode != int32(len(c.want)) || got.EventCode != errUnavailable {
				t.Fatalf("guest read %+v, want metadata %s and event_get %d", got, c.want, errUnavailable)
			}
		})
	}
}

// TestMetadataSetCombines pins how two metadata_set calls of one listener
// call combine, as metadata_get then reads them: merged over the metadata
// so far on images.post, the last one replacing the client's document on
// metadata.put and metadata.post.
func TestMetadataSetCombines(t *testing.T) {
	t.Parallel()
	set := loadListeners(t, map[string][2]any{"twice": {"setTwice", map[string]any{}}})
	l := set.Listeners()[0]
	cases := []struct {
		event string
		want  string
	}{
		{"images.post", `{"a":1,"b":2,"c":2,"p":0}`},
		{"metadata.put", `{"b":2,"c":2}`},
		{"metadata.post", `{"b":2,"c":2}`},
	}
	for _, c := range cases {
		t.Run(c.event, func(t *testing.T) {
			t.Parallel()
			ev := &recEvent{name: c.event, hasImage: true, md: map[string]any{"p": 0}}
			var got struct{ Metadata json.RawMessage }
			if err := json.Unmarshal([]byte(rejection(t, l.Handle(context.Background(), ev))), &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Metadata) != c.want {
				t.Fatalf("metadata_get after two metadata_set: %s, want %s", got.Metadata, c.want)
			}
		})
	}
}

// TestStartDeadline pins the deadline of a module's start function: at
// least minStartTimeout whatever limits.timeoutMs says; a start that runs
// past it refuses the filter.
func TestStartDeadline(t *testing.T) {
	t.Parallel()
	m := abiModule(i32c(0))
	m.funcs = append(m.funcs, wasmFunc{export: "_initialize", body: opSpin})
	fdir := writeFilter(t, t.TempDir(), "slowstart", m.bytes(), map[string]any{"kind": KindTransformation, "limits": map[string]any{"timeoutMs": 50}})
	start := time.Now()
	_, err := Check(context.Background(), Config{Logger: quietLogger()}, fdir)
	took := time.Since(start)
	if !errors.Is(err, ErrLoad) || !strings.Contains(err.Error(), "start") {
		t.Fatalf("err = %v, want a load error at start", err)
	}
	if took < minStartTimeout {
		t.Fatalf("start stopped after %v, before the %v it may take", took, minStartTimeout)
	}
}

// TestEventGetOnRefusedUpload pins that event_get works in every listener
// call (ABI.md section 5): an upload the service refuses (not an image)
// ends the request with the service's answer before the guest runs, so an
// SDK listener, which reads its event first, logs no error of its own; an
// upload the service accepts reaches it with its image described.
func TestEventGetOnRefusedUpload(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	l := exampleListener(t, "minsize", func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	cases := []struct {
		name    string
		ev      *recEvent
		wantErr func(error) bool
		calls   int64 // the guest's calls so far
	}{
		{"not an image", &recEvent{name: "images.post", infoErr: statusErr(415)},
			func(err error) bool { return err == statusErr(415) }, 0},
		{"too small", &recEvent{name: "images.post", info: map[string]any{"width": 100, "height": 100}},
			func(err error) bool { return isKind(err, KindRejected) }, 1},
		{"large enough", &recEvent{name: "images.post", info: map[string]any{"width": 640, "height": 480}},
			func(err error) bool { return err == nil }, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := l.Handle(context.Background(), c.ev); !c.wantErr(err) {
				t.Fatalf("err = %v", err)
			}
			if got := l.Stats().Calls; got != c.calls {
				t.Errorf("the guest ran %d times, want %d", got, c.calls)
			}
			if strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("the guest logged an error:\n%s", logs.String())
			}
		})
	}
	if tag, _ := json.Marshal(cases[2].ev.md); !strings.Contains(string(tag), `"width":640`) {
		t.Errorf("metadata of the accepted upload: %s", tag)
	}
}

// TestMetadataSetCodes pins metadata_set's answers (ABI.md section 5,
// "Metadata"): ERR_LIMIT for a result over the service's metadata limit
// (on images.post the merged document), ERR_INVALID for anything but a
// JSON object of valid UTF-8, 0 otherwise.
func TestMetadataSetCodes(t *testing.T) {
	t.Parallel()
	docs := []string{"<big 10>", "<big 60>", "<big 100>", "<invalid utf-8>", `[1]`, `{"a":`, `null`, `{"é":"ü"}`}
	set := loadListeners(t, map[string][2]any{"md": {"setMetadata", map[string]any{"settings": map[string]any{"docs": docs}}}})
	l := set.Listeners()[0]
	// The upload's metadata so far takes 56 bytes of the 100 allowed: with
	// a 10-byte tag the merged document fits, with a 60-byte one it does
	// not, though the tag alone would.
	prior := map[string]any{"prior": strings.Repeat("p", 40)}
	cases := []struct {
		event string
		md    map[string]any
		want  string
	}{
		{"images.post", prior, `[0,-5,-5,-3,-3,-3,-3,0]`},
		{"metadata.put", nil, `[0,0,-5,-3,-3,-3,-3,0]`},
		{"metadata.post", nil, `[0,0,-5,-3,-3,-3,-3,0]`},
	}
	for _, c := range cases {
		t.Run(c.event, func(t *testing.T) {
			t.Parallel()
			ev := &recEvent{name: c.event, hasImage: true, md: c.md, maxMD: 100}
			if got := rejection(t, l.Handle(context.Background(), ev)); got != c.want {
				t.Fatalf("metadata_set answered %s, want %s for %q", got, c.want, docs)
			}
		})
	}
}
