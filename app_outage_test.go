package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/e2e/faultproxy"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// busReader reads back what a broker got on the test's topic: "<subject>
// <type> <id>" of each message, in the order the broker holds them.
type busReader func(t *testing.T, n int) []string

// TestEventsSurviveBrokerOutage puts a fault proxy between vitrine and a
// real broker with a JetStream stream (NATS) or a bound queue (RabbitMQ)
// and a webhook subscription beside it: the server starts while the
// broker is refused; while it is refused and then stalled, every change
// reaches the webhook; when it is back, the broker gets every event,
// each once (JetStream deduplicates on Nats-Msg-Id), in order per subject,
// with the same ids as the webhook; /status shows the topic's backlog and
// error meanwhile.
func TestEventsSurviveBrokerOutage(t *testing.T) {
	for _, b := range []struct {
		name  string
		setup func(t *testing.T, name string, px func(target string) string) (topic string, read busReader)
	}{{"nats", jetStreamTopic}, {"rabbit", rabbitQueueTopic}} {
		t.Run(b.name, func(t *testing.T) {
			var px *faultproxy.Proxy
			topic, readBus := b.setup(t, storagetest.UniqueName(), func(target string) string {
				px = faultproxy.Start(t, target)
				return px.Addr
			})
			px.Set(faultproxy.Refuse)
			base := runApp(t, fmt.Sprintf(outageAppConfig, topic))
			hook := newReceiver(t, nil)
			hook.subscribe(base, []string{"*"}, []string{"*"})

			t.Run("StartedWithTheBrokerRefused", func(t *testing.T) {
				// The subscription's own creation is an event too.
				hook.wait(1 + len(changeSet(t, base, 1)))
				st := waitSink(t, base, "topic:", func(s api.SinkStatus) bool { return s.Pending > 0 && s.LastError != "" })
				if st.FailingSince == "" || !strings.Contains(st.LastError, "connect to") {
					t.Errorf("status of the topic %+v", st)
				}
				// Without a key, /status shows the backlog but not the errors.
				if res, err := http.Get(base + "/status"); err != nil {
					t.Fatal(err)
				} else {
					body, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if strings.Contains(string(body), "connect to") || !strings.Contains(string(body), st.Sink) {
						t.Errorf("/status without a key: %s", body)
					}
				}
				m := string(read(t, base+"/metrics"))
				if !strings.Contains(m, `vitrine_events_sink_failing{kind="topic",sink="`+st.Sink+`"} 1`) ||
					!strings.Contains(m, `vitrine_events_sink_pending{kind="webhooks",sink="webhooks"}`) {
					t.Errorf("metrics lack the sinks:\n%s", grepLines(m, "vitrine_events_sink"))
				}
			})
			px.Set(faultproxy.Pass)
			readBus(t, 7)
			t.Run("Stalled", func(t *testing.T) {
				px.Set(faultproxy.Stall)
				hook.wait(len(changeSet(t, base, 2)))
			})
			px.Set(faultproxy.Pass)
			got := readBus(t, 13)
			hooked := hook.wait(0)
			if !sameIDs(got, hooked) {
				t.Errorf("the broker got\n%s\nthe webhook\n%s", strings.Join(got, "\n"), strings.Join(hooked, "\n"))
			}
			for subject, w := range bySubject(hooked) {
				if g := bySubject(got)[subject]; !slices.Equal(g, w) {
					t.Errorf("%s: the broker got %v, the webhook %v", subject, g, w)
				}
			}
			waitSink(t, base, "topic:", func(s api.SinkStatus) bool { return s.Pending == 0 && s.FailingSince == "" })
		})
	}
}

const outageAppConfig = `
accessControl:
  keys:
    - publicKey: events
      privateKey: events-secret
      rules: [{group: all, users: "*"}]
events:
  topics: [%q]
  interval: 20ms
webhooks:
  retryMin: 20ms
  retryMax: 100ms
  timeout: 2s
outbound:
  allow: [127.0.0.1]
metrics:
  enabled: true
`

// changeSet makes 6 changes to two new images (seed tells them from
// other sets' images) and returns them as "<subject> <type>".
func changeSet(t *testing.T, base string, seed uint8) []string {
	a := upload(t, base, color.NRGBA{R: seed, G: 1, A: 255})
	b := upload(t, base, color.NRGBA{R: seed, G: 2, A: 255})
	call(t, http.MethodPut, base+"/users/u/images/"+a+"/metadata", `{"n":1}`)
	call(t, http.MethodPost, base+"/users/u/images/"+a+"/metadata", `{"m":2}`)
	call(t, http.MethodDelete, base+"/users/u/images/"+b, "")
	call(t, http.MethodDelete, base+"/users/u/images/"+a, "")
	sa, sb := "users/u/images/"+a, "users/u/images/"+b
	return []string{sa + " io.vitrine.image.added", sb + " io.vitrine.image.added", sa + " io.vitrine.metadata.replaced",
		sa + " io.vitrine.metadata.merged", sb + " io.vitrine.image.deleted", sa + " io.vitrine.image.deleted"}
}

// sameIDs reports whether a and b hold the same events, by id, each once.
func sameIDs(a, b []string) bool {
	ids := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			out = append(out, strings.Fields(l)[2])
		}
		slices.Sort(out)
		return out
	}
	x, y := ids(a), ids(b)
	return len(x) == len(slices.Compact(slices.Clone(x))) && slices.Equal(x, y)
}

// waitSink waits until the sink of /status whose name starts with prefix
// meets cond, and returns it.
func waitSink(t *testing.T, base, prefix string, cond func(api.SinkStatus) bool) api.SinkStatus {
	t.Helper()
	var last api.SinkStatus
	waitFor(t, "the sink "+prefix+" in /status", func() bool {
		var st api.Status
		// read sends an access token: the last errors are shown to a key
		// only.
		if err := json.Unmarshal(read(t, base+"/status"), &st); err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Sinks {
			if strings.HasPrefix(s.Sink, prefix) {
				last = s
				return cond(s)
			}
		}
		return false
	})
	return last
}

// jetStreamTopic makes a JetStream stream for a new subject on the NATS
// server of VITRINE_TEST_NATS, points NATS_SERVER_URL at a proxy of it,
// and reads the stream back by sequence.
func jetStreamTopic(t *testing.T, name string, px func(string) string) (string, busReader) {
	server := os.Getenv(envNATS)
	if server == "" {
		t.Skip("set " + envNATS + "=nats://127.0.0.1:4222 to run")
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_SERVER_URL", "nats://"+px(u.Host))
	nc, err := nats.Connect(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subject := "vitrine.test." + name
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	return "nats://" + subject + "?natsv2", func(t *testing.T, n int) []string {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d messages in the stream", n), func() bool {
			info, err := stream.Info(ctx)
			return err == nil && info.State.Msgs >= uint64(n)
		})
		var out []string
		info, _ := stream.Info(ctx)
		for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
			m, err := stream.GetMsg(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Header
			// Plain headers, as the CloudEvents NATS binding has them.
			if h.Get("ce-source") != storage.EventSource || h.Get("content-type") != "application/json" ||
				h.Get("Nats-Msg-Id") != h.Get("ce-id") {
				t.Errorf("headers %v", h)
			}
			out = append(out, h.Get("ce-subject")+" "+h.Get("ce-type")+" "+h.Get("ce-id"))
		}
		return out
	}
}

// rabbitQueueTopic declares a fanout exchange and a bound queue on the
// RabbitMQ server of VITRINE_TEST_RABBIT, points RABBIT_SERVER_URL at a
// proxy of it, and consumes the queue.
func rabbitQueueTopic(t *testing.T, name string, px func(string) string) (string, busReader) {
	server := os.Getenv(envRabbit)
	if server == "" {
		t.Skip("set " + envRabbit + "=amqp://guest:guest@127.0.0.1:5672/ to run")
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	proxied := *u
	proxied.Host = px(u.Host)
	t.Setenv("RABBIT_SERVER_URL", proxied.String())
	conn, err := amqp.Dial(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch := declareFanoutQueue(t, conn, name)
	msgs, err := ch.Consume(name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	return "rabbit://" + name, func(t *testing.T, n int) []string {
		t.Helper()
		timeout := time.After(time.Minute) // a guard against a hang, not a measure
		for len(got) < n {
			select {
			case m := <-msgs:
				h := func(k string) string { s, _ := m.Headers[k].(string); return s }
				got = append(got, h("ce-subject")+" "+h("ce-type")+" "+h("ce-id"))
			case <-timeout:
				t.Fatalf("%d of %d messages: %v", len(got), n, got)
			}
		}
		return slices.Clone(got)
	}
}

// grepLines returns the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
