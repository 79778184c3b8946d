// The service's OpenTelemetry set-up, from the standard OTEL_* environment
// variables (api/README.md, Tracing). The packages start their own spans on
// otel's global provider and pass W3C trace context through otel's
// propagators; this file installs that provider and propagator.
//
// Tracing is off unless the environment asks for it (tracingConfigured):
// then the global provider stays OpenTelemetry's no-op one, every span
// started on it is a no-op, and nothing is exported.

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/vitrine/vitrine/storage"
)

// tracerName is the instrumentation scope of the service's own spans, the
// one every package names on otel's global provider.
const tracerName = "github.com/vitrine/vitrine"

// tracingConfigured reports whether the environment (getenv) asks for
// traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), a service name (OTEL_SERVICE_NAME)
// or OTEL_TRACES_EXPORTER=otlp, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none.
func tracingConfigured(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME"} {
		if getenv(k) != "" {
			return true
		}
	}
	return false
}

// setupTracing installs the global tracer provider and the W3C trace
// context propagator when the environment asks for traces, and returns the
// function that flushes and stops them (nil when tracing stays off). The
// exporter, the sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG),
// the batching (OTEL_BSP_*) and the resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES) read their own variables.
func setupTracing(ctx context.Context, getenv func(string) string, version string) (shutdown func(context.Context) error, err error) {
	if !tracingConfigured(getenv) {
		return nil, nil
	}
	exp, err := traceExporter(ctx, getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("vitrine"), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	tracingOn.Store(true)
	return func(ctx context.Context) error {
		tracingOn.Store(false)
		err := tp.Shutdown(ctx)
		otel.SetTracerProvider(noop.NewTracerProvider()) // the global provider goes back to off
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		return err
	}, nil
}

// traceExporter is the OTLP exporter of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// (or OTEL_EXPORTER_OTLP_PROTOCOL): http/protobuf, the default, or grpc.
func traceExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if proto == "" {
		proto, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	switch proto {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%s: unsupported protocol %q (http/protobuf or grpc)", name, proto)
	}
}

// tracingOn is set while setupTracing's provider is installed:
// instrumentation that costs something even with no-op spans and has no
// recording parent span to ask (wrapping handlers, the workers' root spans)
// checks it.
var tracingOn atomic.Bool

// tracedHandler wraps h in otelhttp's server span when tracing is on (h
// itself when off). The span is named by the method until the API names it after
// the route it matched (http.route), never after the raw path.
func tracedHandler(h http.Handler) http.Handler {
	if !tracingOn.Load() {
		return h
	}
	return otelhttp.NewHandler(h, "vitrine", otelhttp.WithSpanNameFormatter(
		func(_ string, r *http.Request) string { return r.Method }))
}

// traceEvent is the outbox's tracer (outbox.Tracer): while tracing is
// on, a span named name of kind under the trace of the change that wrote
// e, with the event's type, id and subject, so that what an event does
// later, on any instance, shows in the trace of that change.
func traceEvent(ctx context.Context, e storage.Event, name string, kind trace.SpanKind,
	attrs ...attribute.KeyValue) (context.Context, func(error)) {
	if !tracingOn.Load() {
		return ctx, func(error) {}
	}
	ctx, span := otel.Tracer(tracerName).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(append(attrs,
		attribute.String("cloudevents.event_type", e.Type), attribute.String("cloudevents.event_id", e.ID),
		attribute.String("cloudevents.event_subject", e.Subject))...))
	return ctx, func(err error) { endSpan(span, err) }
}

// traceSpan starts a span named name with attrs under ctx's span on
// otel's global provider (a no-op while tracing is off) and returns ctx
// carrying it and the function that ends it with its outcome: the hook
// filters.Config.Trace takes.
func traceSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) { endSpan(span, err) }
}

// endSpan ends span, recording err (when not nil) as its error status.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// pprofMux serves net/http/pprof's handlers on a mux of their own, so the
// profiles never appear on the API's address.
func pprofMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return m
}
