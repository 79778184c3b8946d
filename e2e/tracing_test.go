package e2e

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP traces receiver on loopback: it decodes
// every ExportTraceServiceRequest (protobuf) and keeps its spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	bad   []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	o := &otlpReceiver{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			o.bad = append(o.bad, fmt.Sprintf("%s %s %s: %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err))
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				o.spans = append(o.spans, ss.Spans...)
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(o.Close)
	return o
}

// trace returns the spans received of the trace id.
func (o *otlpReceiver) trace(id []byte) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if string(s.TraceId) == string(id) {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func attrString(s *tracepb.Span, key string) string {
	if v := attr(s, key); v != nil {
		return v.GetStringValue()
	}
	return ""
}

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$`)

// TestTracing renders an image with a native and a guest step under a
// client's traceparent, with traces exported over OTLP/HTTP to a receiver
// in the test, and checks the trace's tree: the server span is the
// client's span's child, named after the route, and under it the blob
// read, the admission wait, the decode, each step (the guest's with its
// instance wait and run apart), the encode and SQL statements. A webhook
// delivery carries a traceparent of an exported trace.
func TestTracing(t *testing.T) {
	rc := newOTLPReceiver(t)
	var (
		hookMu      sync.Mutex
		hookParents []string
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		hookParents = append(hookParents, r.Header.Get("traceparent"))
		hookMu.Unlock()
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(hook.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_SERVICE_NAME", "vitrine-e2e")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	dir := exampleFilters(t)
	admin := key{Public: "admin", Private: "admin-secret"}
	s := startServer(t, fmt.Sprintf(`filters:
  dir: %s
outbound:
  allow: ["127.0.0.1"]
events:
  interval: 100ms
accessControl:
  keys:
    - publicKey: admin
      privateKey: admin-secret
      rules:
        - users: "*"
          group: all
`, dir))
	if list := settledFilters(t, s, admin); list["duotone"].State != "ready" {
		t.Fatalf("duotone: %+v", list["duotone"])
	}
	r := s.writeJSON(t, http.MethodPost, "/webhooks", map[string]any{"url": hook.URL + "/hook",
		"events": []string{"io.vitrine.image.added"}}, admin)
	wantStatus(t, "create a webhook", r, http.StatusCreated)
	// The upload comes with a client's trace context: its event's
	// delivery continues that trace.
	const uploadTrace = "0af7651916cd43dd8448eb211c80319c"
	r = s.do(t, http.MethodPost, "/users/alice/images", testPNG(t, 320, 240, 3), func(req *http.Request) {
		signWrite(req, admin)
		req.Header.Set("traceparent", "00-"+uploadTrace+"-b7ad6b7169203331-01")
	})
	wantStatus(t, "upload", r, http.StatusCreated)
	var up struct{ ImageIdentifier string }
	r.JSON(t, &up)

	traceID, _ := hex.DecodeString("4bf92f3577b34da6a3ce929d0e0e4736")
	clientSpan, _ := hex.DecodeString("00f067aa0ba902b7")
	img := "/users/alice/images/" + up.ImageIdentifier + ".png?t[]=thumbnail:width=160,height=120&t[]=duotone:dark=202020,light=f0f0f0"
	r = s.do(t, http.MethodGet, signRead(s.URL+img, admin), nil, func(req *http.Request) {
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	})
	wantStatus(t, "traced render", r, http.StatusOK)

	var spans []*tracepb.Span
	var byName map[string]*tracepb.Span
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans = rc.trace(traceID)
		byName = map[string]*tracepb.Span{}
		for _, sp := range spans {
			byName[sp.Name] = sp
		}
		if byName["image.encode"] != nil && byName["GET /users/{user}/images/{image}"] != nil {
			break
		}
		if time.Now().After(deadline) {
			names := []string{}
			for _, sp := range spans {
				names = append(names, sp.Name)
			}
			rc.mu.Lock()
			t.Fatalf("the render's trace did not arrive: spans %v; refused exports %v", names, rc.bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
	byID := map[string]*tracepb.Span{}
	for _, sp := range spans {
		byID[string(sp.SpanId)] = sp
	}
	server := byName["GET /users/{user}/images/{image}"]
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER || string(server.ParentSpanId) != string(clientSpan) {
		t.Fatalf("server span: kind %v, parent %x (the client's span is %x)", server.Kind, server.ParentSpanId, clientSpan)
	}
	if got := attrString(server, "http.route"); got != "/users/{user}/images/{image}" {
		t.Errorf("http.route = %q", got)
	}
	if v := attr(server, "http.response.status_code"); v == nil || v.GetIntValue() != 200 {
		t.Errorf("http.response.status_code = %v", v)
	}
	// under reports whether sp descends from anc.
	under := func(sp, anc *tracepb.Span) bool {
		for p := byID[string(sp.ParentSpanId)]; p != nil; p = byID[string(p.ParentSpanId)] {
			if p == anc {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"blob get", "engine.admission", "image.decode", "transform thumbnail", "transform duotone", "image.encode"} {
		sp := byName[name]
		if sp == nil {
			t.Errorf("no span %q in the render's trace", name)
			continue
		}
		if !under(sp, server) {
			t.Errorf("span %q is not under the server span", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// The steps run in order, each its own span beside the others.
	decode, thumb, duo, encode := byName["image.decode"], byName["transform thumbnail"], byName["transform duotone"], byName["image.encode"]
	if string(thumb.ParentSpanId) != string(duo.ParentSpanId) || string(decode.ParentSpanId) != string(thumb.ParentSpanId) ||
		string(encode.ParentSpanId) != string(thumb.ParentSpanId) {
		t.Errorf("decode, steps and encode have different parents")
	}
	if !(decode.EndTimeUnixNano <= thumb.StartTimeUnixNano && thumb.EndTimeUnixNano <= duo.StartTimeUnixNano &&
		duo.EndTimeUnixNano <= encode.StartTimeUnixNano) {
		t.Errorf("decode, thumbnail, duotone and encode did not run in order")
	}
	if k := attrString(thumb, "vitrine.transformation.kind"); k != "native" {
		t.Errorf("thumbnail kind %q", k)
	}
	if k, n, v := attrString(duo, "vitrine.transformation.kind"), attrString(duo, "vitrine.filter.name"), attrString(duo, "vitrine.filter.version"); k != "guest" || n != "duotone" || v == "" {
		t.Errorf("duotone step: kind %q, filter %q version %q", k, n, v)
	}
	for _, name := range []string{"filter.wait", "filter.run"} {
		sp := byName[name]
		if sp == nil || string(sp.ParentSpanId) != string(duo.SpanId) {
			t.Errorf("%s: %v, not a child of the duotone step", name, sp)
			continue
		}
		if attrString(sp, "vitrine.filter.name") != "duotone" {
			t.Errorf("%s: filter %q", name, attrString(sp, "vitrine.filter.name"))
		}
	}
	if w, run := byName["filter.wait"], byName["filter.run"]; w != nil && run != nil && w.EndTimeUnixNano > run.StartTimeUnixNano {
		t.Errorf("the guest ran before its instance wait ended")
	}
	// The render reserved the duotone's instance before it decoded.
	if r := byName["filter.reserve"]; r == nil || !under(r, server) || attrString(r, "vitrine.filter.name") != "duotone" ||
		r.EndTimeUnixNano > decode.StartTimeUnixNano {
		t.Errorf("filter.reserve: %v, not a reservation of duotone under the server span ended before the decode", r)
	}
	sql := 0
	for _, sp := range spans {
		if attrString(sp, "db.system.name") == "sqlite" && under(sp, server) {
			sql++
			if sp.Kind != tracepb.Span_SPAN_KIND_CLIENT || attrString(sp, "db.operation.name") == "" || strings.Contains(fmt.Sprint(sp.Attributes), up.ImageIdentifier) {
				t.Errorf("SQL span %q: kind %v, attributes %v", sp.Name, sp.Kind, sp.Attributes)
			}
		}
	}
	if sql == 0 {
		t.Errorf("no SQL statement span under the render")
	}

	// The upload's webhook delivery carries the traceparent of a span
	// "events deliver" in the upload's trace, under one of its spans.
	deadline = time.Now().Add(30 * time.Second)
	upload, _ := hex.DecodeString(uploadTrace)
	for {
		hookMu.Lock()
		got := append([]string{}, hookParents...)
		hookMu.Unlock()
		if len(got) > 0 {
			m := traceparentRE.FindStringSubmatch(got[0])
			if m == nil || m[1] != uploadTrace {
				t.Fatalf("webhook traceparent %q, want one of trace %s", got[0], uploadTrace)
			}
			spans := rc.trace(upload)
			ids := map[string]*tracepb.Span{}
			for _, sp := range spans {
				ids[hex.EncodeToString(sp.SpanId)] = sp
			}
			if d := ids[m[2]]; d != nil {
				if d.Name != "events deliver" || ids[hex.EncodeToString(d.ParentSpanId)] == nil {
					t.Fatalf("the delivery's span %q, parent %x, is not under a span of the upload's trace", d.Name, d.ParentSpanId)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exported span of the webhook delivery's traceparent %q", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
