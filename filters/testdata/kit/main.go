//go:build wasip1

// Command kit is the test guest of package filters: one module that
// behaves per the "mode" of its manifest settings, so the tests can load
// it under many manifests. It speaks the raw ABI (no SDK) on purpose: the
// host is tested against ABI.md, not against the SDK's reading of it.
package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

func main() {}

//go:wasmimport vitrine param_get
func paramGet(namePtr, nameLen, bufPtr, bufLen uint32) int32

//go:wasmimport vitrine settings_get
func settingsGet(bufPtr, bufLen uint32) int32

//go:wasmimport vitrine image_width
func imageWidth() int32

//go:wasmimport vitrine image_height
func imageHeight() int32

//go:wasmimport vitrine pixels_read
func pixelsRead(bufPtr, bufLen uint32) int32

//go:wasmimport vitrine pixels_write
func pixelsWrite(w, h, bufPtr, bufLen uint32) int32

//go:wasmimport vitrine event_get
func eventGet(bufPtr, bufLen uint32) int32

//go:wasmimport vitrine body_read
func bodyRead(bufPtr, bufLen uint32) int32

//go:wasmimport vitrine body_write
func bodyWrite(ptr, n uint32) int32

//go:wasmimport vitrine metadata_get
func metadataGet(bufPtr, bufLen uint32) int32

//go:wasmimport vitrine metadata_set
func metadataSet(ptr, n uint32) int32

//go:wasmimport vitrine stats_add
func statsAdd(namePtr, nameLen uint32, delta int64) int32

//go:wasmimport vitrine stats_set
func statsSet(namePtr, nameLen, ptr, n uint32) int32

//go:wasmimport vitrine log
func logLine(level, ptr, n uint32) int32

//go:wasmimport vitrine reject
func reject(status, ptr, n uint32) int32

//go:wasmexport vitrine_abi_v1
func marker() {}

func ptr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

func str(s string) (uint32, uint32) {
	b := []byte(s)
	return ptr(b), uint32(len(b))
}

// fetch calls a "full size" host function, growing the buffer once.
func fetch(f func(p, n uint32) int32) ([]byte, int32) {
	buf := make([]byte, 64)
	n := f(ptr(buf), uint32(len(buf)))
	if n > int32(len(buf)) {
		buf = make([]byte, n)
		n = f(ptr(buf), uint32(len(buf)))
	}
	if n < 0 {
		return nil, n
	}
	return buf[:n], n
}

func param(name string) (string, bool) {
	np, nl := str(name)
	b, n := fetch(func(p, l uint32) int32 { return paramGet(np, nl, p, l) })
	return string(b), n >= 0
}

func settings() map[string]any {
	b, _ := fetch(settingsGet)
	var s map[string]any
	_ = json.Unmarshal(b, &s)
	return s
}

func mode() string {
	m, _ := settings()["mode"].(string)
	return m
}

func rejectJSON(v any) int32 {
	b, _ := json.Marshal(v)
	reject(400, ptr(b), uint32(len(b)))
	return 0
}

// report rejects with codes when the settings ask for a report, and
// returns 0 otherwise.
func report(codes []int32) int32 {
	if r, _ := settings()["report"].(bool); r {
		return rejectJSON(codes)
	}
	return 0
}

var (
	global []byte
	hogs   [][]byte
	calls  int
)

//go:wasmexport vitrine_transform
func transform() int32 {
	w, h := imageWidth(), imageHeight()
	switch mode() {
	case "logFlood":
		line := make([]byte, 1<<20)
		for i := range line {
			line[i] = 'x'
		}
		for i := 0; i < 1000; i++ {
			logLine(1, ptr(line), uint32(len(line)))
		}
		return 0
	case "invert":
		pix := make([]byte, 4*w*h)
		if pixelsRead(ptr(pix), uint32(len(pix))) != int32(len(pix)) {
			return 2
		}
		for i := 0; i < len(pix); i += 4 {
			pix[i], pix[i+1], pix[i+2] = 255-pix[i], 255-pix[i+1], 255-pix[i+2]
		}
		if pixelsWrite(uint32(w), uint32(h), ptr(pix), uint32(len(pix))) != 0 {
			return 3
		}
	case "copy":
		// The least a transformation can do: read the pixels and write
		// them back, into a buffer kept across calls.
		n := int(4 * w * h)
		if cap(global) < n {
			global = make([]byte, n)
		}
		global = global[:n]
		pixelsRead(ptr(global), uint32(n))
		return pixelsWrite(uint32(w), uint32(h), ptr(global), uint32(n))
	case "resize":
		// A solid image of the size the parameters ask for, in the colour
		// of the input's first pixel.
		nw, _ := param("width")
		nh, _ := param("height")
		W, _ := strconv.Atoi(nw)
		H, _ := strconv.Atoi(nh)
		first := make([]byte, 4*w*h)
		pixelsRead(ptr(first), uint32(len(first)))
		out := make([]byte, 4*W*H)
		for i := 0; i < len(out); i += 4 {
			copy(out[i:i+4], first[:4])
		}
		return pixelsWrite(uint32(W), uint32(H), ptr(out), uint32(len(out)))
	case "params":
		// Rejects with every parameter as the guest reads it.
		out := map[string]string{}
		for _, n := range []string{"i", "n", "b", "s", "c", "e", "absent"} {
			if v, ok := param(n); ok {
				out[n] = v
			}
		}
		return rejectJSON(out)
	case "metadata":
		// Rejects with what metadata_get and event_get answer.
		md, mc := fetch(metadataGet)
		_, ec := fetch(eventGet)
		return rejectJSON(map[string]any{"metadata": string(md), "metadataCode": mc, "eventCode": ec})
	case "grow":
		// An output one pixel larger each call of this instance.
		calls++
		out := make([]byte, 4*calls*calls)
		return pixelsWrite(uint32(calls), uint32(calls), ptr(out), uint32(len(out)))
	case "probe":
		return rejectJSON(probe())
	case "escape":
		return rejectJSON(escape())
	case "nothing":
	case "fail":
		return 7
	case "panic":
		panic("kit: deliberate panic")
	case "exit":
		os.Exit(3)
	case "loop":
		for {
			global = append(global[:0], 1)
		}
	case "hog":
		for {
			hogs = append(hogs, make([]byte, 8<<20))
		}
	case "huge":
		big := make([]byte, 16)
		return pixelsWrite(100000, 100000, ptr(big), uint32(len(big)))
	}
	return 0
}

// probe calls host functions with bad arguments and reports their codes.
func probe() map[string]int32 {
	buf := make([]byte, 16)
	np, nl := str("absent")
	return map[string]int32{
		"paramAbsent":      paramGet(np, nl, ptr(buf), uint32(len(buf))),
		"paramFault":       paramGet(0xFFFFFFF0, 100, ptr(buf), uint32(len(buf))),
		"pixelsReadFault":  pixelsRead(0xFFFFFF00, 4096),
		"pixelsReadSmall":  pixelsRead(ptr(buf), uint32(len(buf))),
		"pixelsWriteLen":   pixelsWrite(2, 2, ptr(buf), 15),
		"pixelsWriteZero":  pixelsWrite(0, 5, ptr(buf), 0),
		"pixelsWriteFault": pixelsWrite(2, 2, 0xFFFFFFF8, 16),
		"eventInTransform": eventGet(ptr(buf), uint32(len(buf))),
		"bodyInTransform":  bodyRead(ptr(buf), uint32(len(buf))),
		"metadataSetInT":   metadataSet(ptr(buf), 2),
		"statsSetInT":      statsSet(np, nl, ptr(buf), 1),
		"statsAddBadName":  statsAdd(ptr([]byte("a b")), 3, 1),
		"logBadLevel":      logLine(9, ptr(buf), 1),
		"logBadUTF8":       logLine(1, ptr([]byte{0xff, 0xfe}), 2),
		"rejectBadStatus":  reject(500, ptr(buf), 1),
		"rejectTooLong":    reject(400, ptr(make([]byte, 2000)), 2000),
		"settingsSmallBuf": settingsGet(ptr(buf), 1),
		"metadataGetInT":   metadataGet(ptr(buf), uint32(len(buf))),
		"imageWidth":       imageWidth(),
	}
}

// caps calls the host functions a listener may or may not use in an
// event and reports their codes.
func caps() map[string]int32 {
	buf := make([]byte, 0)
	body := []byte("IMG2")
	md := []byte(`{"k":1}`)
	np, nl := str("x")
	_, evCode := fetch(eventGet)
	_, mdCode := fetch(metadataGet)
	return map[string]int32{
		"event_get":    evCode,
		"body_read":    bodyRead(ptr(buf), 0),
		"body_write":   bodyWrite(ptr(body), uint32(len(body))),
		"metadata_get": mdCode,
		"metadata_set": metadataSet(ptr(md), uint32(len(md))),
		"stats_set":    statsSet(np, nl, ptr([]byte("1")), 1),
		"stats_add":    statsAdd(np, nl, 1),
		"param_get":    paramGet(np, nl, ptr(buf), 0),
		"image_width":  imageWidth(),
		"pixels_read":  pixelsRead(ptr(buf), 0),
	}
}

// escape tries to leave the sandbox and reports what it saw.
func escape() map[string]any {
	out := map[string]any{}
	_, err := os.ReadFile("/etc/passwd")
	out["readFile"] = err != nil
	_, err = os.ReadDir("/")
	out["readDir"] = err != nil
	err = os.WriteFile("/tmp/vitrine-escape", []byte("x"), 0o644)
	out["writeFile"] = err != nil
	out["env"] = len(os.Environ())
	out["args"] = len(os.Args)
	out["year"] = time.Now().Year()
	return out
}

//go:wasmexport vitrine_on_event
func onEvent() int32 {
	switch mode() {
	case "reject":
		m, _ := settings()["message"].(string)
		p, n := str(m)
		reject(403, p, n)
		return 0
	case "tag":
		ev, _ := fetch(eventGet)
		var e struct {
			Event string `json:"event"`
			Image struct {
				Width int `json:"width"`
			} `json:"image"`
		}
		if json.Unmarshal(ev, &e) != nil {
			return 2
		}
		md, _ := json.Marshal(map[string]any{"taggedBy": "kit", "width": e.Image.Width})
		if c := metadataSet(ptr(md), uint32(len(md))); c != 0 {
			return 10 - c
		}
		np, nl := str("tagged")
		statsAdd(np, nl, 1)
	case "stats":
		np, nl := str("kit")
		v := []byte(`{"answer":42}`)
		return statsSet(np, nl, ptr(v), uint32(len(v)))
	case "statsSet":
		// Adds 1 to the counter named by "add", if any, then sets each
		// [name, raw JSON] pair of "set" in order; with "report", rejects
		// with the codes of stats_set.
		if add, _ := settings()["add"].(string); add != "" {
			np, nl := str(add)
			statsAdd(np, nl, 1)
		}
		var set [][2]string
		b, _ := json.Marshal(settings()["set"])
		_ = json.Unmarshal(b, &set)
		codes := []int32{}
		for _, kv := range set {
			v := []byte(kv[1])
			if kv[1] == "<invalid utf-8>" {
				v = []byte{'"', 0xff, '"'}
			}
			np, nl := str(kv[0])
			codes = append(codes, statsSet(np, nl, ptr(v), uint32(len(v))))
		}
		return report(codes)
	case "statsFlood":
		// Sets "count" values named v0, v1... each a JSON string "size"
		// bytes long; with "report", rejects with the codes.
		count, _ := settings()["count"].(float64)
		size, _ := settings()["size"].(float64)
		v := make([]byte, int(size))
		for i := range v {
			v[i] = 'x'
		}
		v[0], v[len(v)-1] = '"', '"'
		codes := []int32{}
		for i := 0; i < int(count); i++ {
			np, nl := str("v" + strconv.Itoa(i))
			codes = append(codes, statsSet(np, nl, ptr(v), uint32(len(v))))
		}
		return report(codes)
	case "count":
		// Adds the settings' "delta" (a decimal string) to the counter "n"
		// as many times as "times" says (1 by default); with "report",
		// rejects with the last code.
		d, _ := settings()["delta"].(string)
		delta, _ := strconv.ParseInt(d, 10, 64)
		times, ok := settings()["times"].(float64)
		if !ok {
			times = 1
		}
		np, nl := str("n")
		var code int32
		for i := 0; i < int(times); i++ {
			code = statsAdd(np, nl, delta)
		}
		return report([]int32{code})
	case "replace":
		body, n := fetch(bodyRead)
		if n < 0 {
			return 2
		}
		// Replace with garbage first (refused), then with the upload cut
		// to its settings-given replacement.
		junk := []byte("not an image")
		if bodyWrite(ptr(junk), uint32(len(junk))) != -3 {
			return 3
		}
		repl, _ := settings()["replacement"].(string)
		if repl != "" {
			body = []byte(repl)
		}
		return bodyWrite(ptr(body), uint32(len(body)))
	case "caps":
		// Rejects with what each host function answers in this event.
		return rejectJSON(caps())
	case "setTwice":
		// Sets two overlapping documents, then rejects with what
		// metadata_get answers.
		for _, md := range []string{`{"a":1,"b":1}`, `{"b":2,"c":2}`} {
			if c := metadataSet(ptr([]byte(md)), uint32(len(md))); c != 0 {
				return rejectJSON(map[string]any{"code": c})
			}
		}
		md, _ := fetch(metadataGet)
		return rejectJSON(map[string]any{"metadata": json.RawMessage(md)})
	case "setMetadata":
		// Sets each document of "docs" in order (a JSON text; "<invalid
		// utf-8>" stands for a string holding the byte 0xff, "<big N>" for
		// an object whose one string is N bytes) and rejects with the codes.
		var docs []string
		b, _ := json.Marshal(settings()["docs"])
		_ = json.Unmarshal(b, &docs)
		codes := []int32{}
		for _, d := range docs {
			doc := []byte(d)
			switch {
			case d == "<invalid utf-8>":
				doc = []byte{'{', '"', 'a', '"', ':', '"', 0xff, '"', '}'}
			case strings.HasPrefix(d, "<big "):
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(d, "<big "), ">"))
				doc = []byte(`{"big":"` + strings.Repeat("x", n) + `"}`)
			}
			codes = append(codes, metadataSet(ptr(doc), uint32(len(doc))))
		}
		return rejectJSON(codes)
	case "tagThenFail":
		md := []byte(`{"shouldNot":"appear"}`)
		metadataSet(ptr(md), uint32(len(md)))
		return 1
	case "fail":
		return 1
	case "hang":
		for {
			global = append(global[:0], 1)
		}
	case "echo":
		// Rejects with the event and metadata it was given.
		ev, _ := fetch(eventGet)
		md, mc := fetch(metadataGet)
		return rejectJSON(map[string]any{"event": json.RawMessage(ev), "metadata": string(md), "metadataCode": mc})
	}
	return 0
}
