package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/propagation"
)

// Message is what one attempt sends: the id that names it on every
// attempt, and the body.
type Message struct {
	ID   string
	Body []byte
}

// Result is what an attempt came to.
type Result struct {
	// Status is the receiver's HTTP status, 0 when it gave none.
	Status int
	// Latency is from the request's start to the end of the answer read.
	Latency time.Duration
	// Response is the first bytes of the answer (ResponseBytes at most).
	Response string
	// Err is why the attempt failed: no answer, or a status outside
	// 2xx. nil when the receiver took the message.
	Err error
}

// ResponseBytes is how much of an answer a Result keeps.
const ResponseBytes = 1024

// ContentType is the body's media type: a CloudEvent in structured mode.
const ContentType = "application/cloudevents+json"

// UserAgent names vitrine to receivers.
const UserAgent = "vitrine-webhooks/1"

// Send posts m to url, signed with secret, through client, and returns
// the attempt's result. A 2xx answer is a delivery; anything else,
// including a redirect (the client must not follow them), is not.
func Send(ctx context.Context, client *http.Client, url, secret string, m Message) Result {
	start := time.Now()
	sig, err := Sign(secret, m.ID, start, m.Body)
	if err != nil {
		return Result{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(m.Body))
	if err != nil {
		return Result{Err: fmt.Errorf("webhook: request: %w", err)}
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("webhook-id", m.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(start.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	// The W3C trace context of the delivery (traceparent): its span's
	// while tracing is on, else that of the change it tells of, if traced.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := client.Do(req)
	if err != nil {
		return Result{Latency: time.Since(start), Err: err}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, ResponseBytes))
	// Drain a little more so that the connection can be reused, but never
	// wait long for a receiver that streams.
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	r := Result{Status: resp.StatusCode, Latency: time.Since(start), Response: string(head)}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r.Err = fmt.Errorf("webhook: receiver answered %s", resp.Status)
	}
	return r
}
