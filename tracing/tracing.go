// Package tracing sets up OpenTelemetry traces from the standard OTEL_*
// environment variables and holds the small helpers the rest of the
// service uses to start spans and pass W3C trace context on.
//
// Tracing is off unless the environment asks for it (Configured): then the
// global provider stays OpenTelemetry's no-op one, every span started
// through Tracer is a no-op, and nothing is exported.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of the service's own spans.
const Name = "github.com/vitrine/vitrine"

// Tracer is the service's tracer on the global provider (a no-op one while
// tracing is off).
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// Start starts a span named name as a child of ctx's span.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, opts...)
}

// End ends span, recording err (when not nil) as its error status.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Configured reports whether the environment (getenv) asks for traces: an
// OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), a service name (OTEL_SERVICE_NAME)
// or OTEL_TRACES_EXPORTER=otlp, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none.
func Configured(getenv func(string) string) bool {
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

// Setup installs the global tracer provider and the W3C trace context
// propagator when the environment asks for traces, and returns the
// function that flushes and stops them (nil when tracing stays off). The
// exporter, the sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG),
// the batching (OTEL_BSP_*) and the resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES) read their own variables.
func Setup(ctx context.Context, getenv func(string) string, version string) (shutdown func(context.Context) error, err error) {
	if !Configured(getenv) {
		return nil, nil
	}
	exp, err := exporter(ctx, getenv)
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
	on.Store(true)
	return func(ctx context.Context) error {
		on.Store(false)
		err := tp.Shutdown(ctx)
		otel.SetTracerProvider(noop.NewTracerProvider()) // the global provider goes back to off
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		return err
	}, nil
}

// exporter is the OTLP exporter of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (or
// OTEL_EXPORTER_OTLP_PROTOCOL): http/protobuf, the default, or grpc.
func exporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
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

// Inject writes ctx's trace context (traceparent, tracestate) into h.
func Inject(ctx context.Context, h http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}

// Traceparent is ctx's span as a W3C traceparent value; "" when ctx has no
// sampled-or-not valid span (tracing off).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// FromTraceparent returns ctx carrying the remote span context of a W3C
// traceparent value (and tracestate), unchanged when tp is not valid.
func FromTraceparent(ctx context.Context, tp, state string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": state})
}

// on is set while Setup's provider is installed.
var on atomic.Bool

// On reports whether tracing is on: instrumentation that costs something
// even with no-op spans (building attributes, wrapping handlers) checks it.
func On() bool { return on.Load() }

// Handler wraps h in otelhttp's server span when tracing is on (h itself
// when off). The span is named by the method until the API names it after
// the route it matched (http.route), never after the raw path.
func Handler(h http.Handler) http.Handler {
	if !On() {
		return h
	}
	return otelhttp.NewHandler(h, "vitrine", otelhttp.WithSpanNameFormatter(
		func(_ string, r *http.Request) string { return r.Method }))
}
