package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// offNs keeps the last "off" ns/op per case for the ratio "on" reports.
var offNs sync.Map

// BenchmarkTracing puts a number on what tracing costs a render (e2e/README.md,
// Tracing: cost): the thumbnail cell of BenchmarkHTTPvsProcess ("http") with
// tracing off, then on, every request sampled, its spans (server, SQL,
// blob read, admission, decode, step, encode) exported over OTLP/HTTP to a
// receiver on loopback that reads and drops them. "on" reports on/off, the
// ratio of the two ns/op (1.03 is 3% slower). Run with:
//
//	go test ./api -run '^$' -bench Tracing -benchtime 5s -count 3
func BenchmarkTracing(b *testing.B) {
	const spec = "thumbnail:width=200,height=200"
	for _, size := range benchSizes {
		b.Run("thumbnail200/"+size.name, func(b *testing.B) {
			srcs := benchJPEGs(b, size.w, size.h)
			run := func(b *testing.B, on bool) {
				if on {
					recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						_, _ = io.Copy(io.Discard, r.Body)
						w.Header().Set("Content-Type", "application/x-protobuf")
					}))
					defer recv.Close()
					b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
					stop, err := startTracing(context.Background())
					if err != nil {
						b.Fatalf("startTracing: %v", err)
					}
					defer func() {
						if err := stop(context.Background()); err != nil {
							b.Error(err)
						}
					}()
				}
				s := newBenchServer(b, false)
				urls := make([]string, len(srcs))
				for i, src := range srcs {
					urls[i] = s.imageURL(s.upload(b, src), spec)
				}
				if _, err := s.fetch(urls[0]); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				ns := runParallel(b, func(i int) error {
					_, err := s.fetch(urls[i%len(urls)])
					return err
				})
				b.ReportMetric(1e9/ns, "ops/s")
				if !on {
					offNs.Store(size.name, ns)
				} else if v, ok := offNs.Load(size.name); ok {
					b.ReportMetric(ns/v.(float64), "on/off")
				}
			}
			b.Run("off", func(b *testing.B) { run(b, false) })
			b.Run("on", func(b *testing.B) { run(b, true) })
		})
	}
}

// startTracing turns tracing on as the server does when
// OTEL_EXPORTER_OTLP_ENDPOINT is set (api/README.md, Tracing): a global provider
// of the SDK that samples every span and exports it over OTLP/HTTP (the
// exporter reads OTEL_EXPORTER_OTLP_ENDPOINT), and the W3C propagator. The
// function it returns flushes and turns tracing off again.
func startTracing(ctx context.Context) (stop func(context.Context) error, err error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		return err
	}, nil
}

// traced is h as the server wraps it: in otelhttp's server span, named by
// the method until the API names it after its route, while startTracing's
// provider is installed; h itself while tracing is off.
func traced(h http.Handler) http.Handler {
	if _, on := otel.GetTracerProvider().(*sdktrace.TracerProvider); !on {
		return h
	}
	return otelhttp.NewHandler(h, "vitrine", otelhttp.WithSpanNameFormatter(
		func(_ string, r *http.Request) string { return r.Method }))
}
