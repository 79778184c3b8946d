package main

import (
	"context"
	"testing"
)

func TestTracingConfigured(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_SERVICE_NAME": "vitrine-eu"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "a=b"}, false},
	} {
		if got := tracingConfigured(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("tracingConfigured(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestSetupTracingRefusesAnUnknownProtocol(t *testing.T) {
	env := map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
	stop, err := setupTracing(context.Background(), func(k string) string { return env[k] }, "test")
	if err == nil || stop != nil || tracingOn.Load() {
		t.Fatalf("setupTracing with http/json: %v", err)
	}
	if want := `OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol "http/json" (http/protobuf or grpc)`; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
