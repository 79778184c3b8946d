package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiveOTLP serves OTLP/HTTP trace exports (POST /v1/traces, protobuf,
// gzip or not) on addr until SIGTERM or SIGINT, answering each with an
// empty success at once. GET /stats decodes the exports received since the
// last one and answers the counts so far ("exports N spans N bytes N
// rejected N", bytes as sent): e2e/load/tracing.sh asks between segments,
// so that decoding takes no CPU from the server while it is measured. An
// export that does not decode counts as rejected.
func receiveOTLP(addr string) {
	var (
		mu                             sync.Mutex
		pending                        []otlpExport
		exports, spans, size, rejected int
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range pending {
			n, err := countSpans(e)
			if err != nil {
				rejected++
				continue
			}
			exports++
			spans += n
		}
		pending = nil
		fmt.Fprintf(w, "exports %d spans %d bytes %d rejected %d\n", exports, spans, size, rejected)
	})
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		pending = append(pending, otlpExport{body, r.Header.Get("Content-Encoding") == "gzip"})
		size += len(body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	})
	serve(addr, mux)
	waitForStop()
}

// otlpExport is one export's body as received.
type otlpExport struct {
	body    []byte
	gzipped bool
}

// countSpans decodes an export and counts its spans.
func countSpans(e otlpExport) (int, error) {
	body := e.body
	if e.gzipped {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		if body, err = io.ReadAll(zr); err != nil {
			return 0, err
		}
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		return 0, err
	}
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n, nil
}
