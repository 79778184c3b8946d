package filters

import (
	"context"
	"encoding/json"
	"image"
	"log/slog"
	"regexp"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// hostModule is the import module of the host functions (ABI.md section 5).
const hostModule = "vitrine"

// Return codes of the host functions (ABI.md section 5).
const (
	errNotFound    int32 = -1
	errFault       int32 = -2
	errInvalid     int32 = -3
	errUnavailable int32 = -4
	errLimit       int32 = -5
)

// Text limits of the host functions.
const (
	maxLogBytes    = 4096
	maxRejectBytes = 1024
	// maxLogLines is how many lines one call may log; the rest are
	// counted and reported in one line when the call ends.
	maxLogLines = 100
)

// statName is what stats_add and stats_set accept as a counter name.
var statName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// Limits of stats_set, per filter and per GET /stats response (one call of
// a stats.get listener): they bound what one filter adds to the response.
const (
	maxStatValueBytes = 64 << 10  // one value
	maxStatBytes      = 256 << 10 // all the values of one call
	maxStatNames      = 256       // names set in one call
)

// call is the state of one invocation of a guest export, found by the host
// functions through the context the export is called with.
type call struct {
	// transformation calls
	params   map[string]string
	in       *image.NRGBA
	metadata map[string]any
	// emit takes each output the guest sets, as a view of its memory
	// valid only during the call to emit.
	emit func(*image.NRGBA) error
	// listener calls
	event     Event
	eventJSON []byte
	// pending changes of a listener, applied when the call succeeds.
	body  []byte
	md    map[string]any
	mdSet bool
	// stats are the call's stats_set values by name, as GET /stats will
	// write them; statBytes is the sum of their lengths.
	stats     map[string]json.RawMessage
	statBytes int
	// rejected is set by `reject`; it wins over the export's result.
	rejected *Error
	// serviceErr is the service's own failure to give the guest what it
	// asked for (an upload that is not an image, a metadata document that
	// is not JSON, a database error). It ends the request with the
	// service's answer, whatever the guest does, and is not the guest's
	// fault.
	serviceErr error
	// logLines counts the call's log lines, kept and dropped.
	logLines int
}

// serviceFailed records err as the call's service error and returns
// ERR_UNAVAILABLE for the guest.
func (c *call) serviceFailed(err error) int32 {
	if c.serviceErr == nil {
		c.serviceErr = err
	}
	return errUnavailable
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// callOf returns the state of the running call, nil outside a call (in
// _initialize).
func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// host holds what the host functions of one filter need beyond the call.
type host struct {
	name      string
	settings  []byte
	log       *slog.Logger
	counters  *counters
	maxW      int
	maxH      int
	maxPixels int64
}

// hostFunc is one host function: its ABI signature and implementation.
type hostFunc struct {
	name            string
	params, results []api.ValueType
	fn              api.GoModuleFunc
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

func u32(v uint64) uint32 { return uint32(v) }

// ret encodes an i32 result.
func ret(v int32) uint64 { return uint64(uint32(v)) }

// functions is the table of host functions: the builder exports them and
// the load-time checks compare a module's imports against it.
func (h *host) functions() []hostFunc {
	return []hostFunc{
		{"param_get", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.paramGet(ctx, m, u32(s[0]), u32(s[1]), u32(s[2]), u32(s[3])))
		}},
		{"settings_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.settingsGet(m, u32(s[0]), u32(s[1])))
		}},
		{"image_width", nil, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.imageSize(ctx, true))
		}},
		{"image_height", nil, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.imageSize(ctx, false))
		}},
		{"pixels_read", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.pixelsRead(ctx, m, u32(s[0]), u32(s[1])))
		}},
		{"pixels_write", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.pixelsWrite(ctx, m, u32(s[0]), u32(s[1]), u32(s[2]), u32(s[3])))
		}},
		{"event_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.eventGet(ctx, m, u32(s[0]), u32(s[1])))
		}},
		{"body_read", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.bodyRead(ctx, m, u32(s[0]), u32(s[1])))
		}},
		{"body_write", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.bodyWrite(ctx, m, u32(s[0]), u32(s[1])))
		}},
		{"metadata_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.metadataGet(ctx, m, u32(s[0]), u32(s[1])))
		}},
		{"metadata_set", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.metadataSet(ctx, m, u32(s[0]), u32(s[1])))
		}},
		{"stats_add", []api.ValueType{i32, i32, i64}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.statsAdd(m, u32(s[0]), u32(s[1]), int64(s[2])))
		}},
		{"stats_set", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.statsSet(ctx, m, u32(s[0]), u32(s[1]), u32(s[2]), u32(s[3])))
		}},
		{"log", []api.ValueType{i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.logLine(ctx, m, u32(s[0]), u32(s[1]), u32(s[2])))
		}},
		{"reject", []api.ValueType{i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
			s[0] = ret(h.reject(ctx, m, u32(s[0]), u32(s[1]), u32(s[2])))
		}},
	}
}

// instantiate adds the `vitrine` module to the filter's runtime.
func (h *host) instantiate(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(hostModule)
	for _, f := range h.functions() {
		b.NewFunctionBuilder().WithGoModuleFunction(f.fn, f.params, f.results).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// read returns a view of the guest's (ptr, n) range; ok is false when it
// lies outside the memory.
func read(m api.Module, ptr, n uint32) ([]byte, bool) {
	if n == 0 {
		return nil, uint64(ptr) <= uint64(m.Memory().Size())
	}
	return m.Memory().Read(ptr, n)
}

// text reads a UTF-8 string argument; code is 0 or the error to return.
func text(m api.Module, ptr, n uint32) (s string, code int32) {
	b, ok := read(m, ptr, n)
	if !ok {
		return "", errFault
	}
	if !utf8.Valid(b) {
		return "", errInvalid
	}
	return string(b), 0
}

// copyOut implements the "full size" convention: it copies v into the
// guest's buffer when it fits and returns len(v) either way.
func copyOut(m api.Module, ptr, n uint32, v []byte) int32 {
	buf, ok := read(m, ptr, n)
	if !ok {
		return errFault
	}
	if len(v) > int(n) {
		return int32(min(len(v), 1<<31-1))
	}
	copy(buf, v)
	return int32(len(v))
}

// transformation returns the running call when it is a transformation's.
func transformation(ctx context.Context) *call {
	if c := callOf(ctx); c != nil && c.in != nil {
		return c
	}
	return nil
}

// listener returns the running call when it is a listener's.
func listener(ctx context.Context) *call {
	if c := callOf(ctx); c != nil && c.event != nil {
		return c
	}
	return nil
}

func (h *host) paramGet(ctx context.Context, m api.Module, namePtr, nameLen, buf, bufLen uint32) int32 {
	c := transformation(ctx)
	if c == nil {
		return errUnavailable
	}
	name, code := text(m, namePtr, nameLen)
	if code != 0 {
		return code
	}
	v, ok := c.params[name]
	if !ok {
		if _, ok := read(m, buf, bufLen); !ok {
			return errFault
		}
		return errNotFound
	}
	return copyOut(m, buf, bufLen, []byte(v))
}

func (h *host) settingsGet(m api.Module, buf, bufLen uint32) int32 {
	if h.settings == nil {
		return errNotFound
	}
	return copyOut(m, buf, bufLen, h.settings)
}

func (h *host) imageSize(ctx context.Context, width bool) int32 {
	c := transformation(ctx)
	if c == nil {
		return errUnavailable
	}
	if width {
		return int32(c.in.Rect.Dx())
	}
	return int32(c.in.Rect.Dy())
}

func (h *host) pixelsRead(ctx context.Context, m api.Module, buf, bufLen uint32) int32 {
	c := transformation(ctx)
	if c == nil {
		return errUnavailable
	}
	return copyOut(m, buf, bufLen, c.in.Pix)
}

// exceeds reports whether n is over limit, zero meaning no limit.
func exceeds(n, limit int64) bool { return limit > 0 && n > limit }

func (h *host) pixelsWrite(ctx context.Context, m api.Module, w, hgt, buf, bufLen uint32) int32 {
	c := transformation(ctx)
	if c == nil {
		return errUnavailable
	}
	width, height := int32(w), int32(hgt)
	if width < 1 || height < 1 || exceeds(int64(width), int64(h.maxW)) || exceeds(int64(height), int64(h.maxH)) ||
		exceeds(int64(width)*int64(height), h.maxPixels) {
		return errLimit
	}
	if uint64(bufLen) != 4*uint64(width)*uint64(height) {
		return errInvalid
	}
	src, ok := read(m, buf, bufLen)
	if !ok {
		return errFault
	}
	// The consumer copies the view at once, as the ABI promises the
	// guest: it may reuse its buffer when pixels_write returns.
	view := &image.NRGBA{Pix: src[:bufLen:bufLen], Stride: 4 * int(width), Rect: image.Rect(0, 0, int(width), int(height))}
	if err := c.emit(view); err != nil {
		return c.serviceFailed(err)
	}
	return 0
}

func (h *host) statsAdd(m api.Module, namePtr, nameLen uint32, delta int64) int32 {
	name, code := text(m, namePtr, nameLen)
	if code != 0 {
		return code
	}
	if !statName.MatchString(name) {
		return errInvalid
	}
	if !h.counters.add(name, delta) {
		return errLimit
	}
	return 0
}

var logLevels = [...]slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}

func (h *host) logLine(ctx context.Context, m api.Module, level, ptr, n uint32) int32 {
	if level >= uint32(len(logLevels)) {
		return errInvalid
	}
	if c := callOf(ctx); c != nil {
		if c.logLines++; c.logLines > maxLogLines {
			return 0
		}
	}
	// Why cut before checking: a guest may pass megabytes; only the kept
	// part is checked and copied (read is a view of guest memory).
	b, ok := read(m, ptr, n)
	if !ok {
		return errFault
	}
	if len(b) > maxLogBytes {
		cut := maxLogBytes
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	if !utf8.Valid(b) {
		return errInvalid
	}
	h.log.Log(ctx, logLevels[level], string(b), "filter", h.name)
	return 0
}

// logDropped writes one line saying how many lines of call c were dropped
// past maxLogLines, if any.
func (h *host) logDropped(ctx context.Context, c *call) {
	if n := c.logLines - maxLogLines; n > 0 {
		h.log.Log(ctx, slog.LevelWarn, "filter log lines dropped", "filter", h.name, "dropped", n)
	}
}

func (h *host) reject(ctx context.Context, m api.Module, status, ptr, n uint32) int32 {
	c := callOf(ctx)
	if c == nil {
		return errUnavailable
	}
	if status < 400 || status > 499 {
		return errInvalid
	}
	msg, code := text(m, ptr, n)
	if code != 0 {
		return code
	}
	if len(msg) > maxRejectBytes {
		return errLimit
	}
	c.rejected = &Error{Kind: KindRejected, Filter: h.name, Status: int(status), Msg: msg}
	return 0
}
