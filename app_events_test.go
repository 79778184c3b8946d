package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"gocloud.dev/pubsub"

	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// The brokers of the events tests come from the environment; a test that
// needs one that is not set skips, naming the variable.
const (
	envNATS   = "VITRINE_TEST_NATS"
	envRabbit = "VITRINE_TEST_RABBIT"
)

// eventBroker subscribes to a fresh topic of a broker and returns the
// topic's URL for events.topics.
type eventBroker func(t *testing.T, name string) (topic string, sub *pubsub.Subscription)

// memBroker: mem:// topics live in this process.
func memBroker(t *testing.T, name string) (string, *pubsub.Subscription) {
	u := "mem://" + name
	topic, err := pubsub.OpenTopic(context.Background(), u) // the subscription needs the topic
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topic.Shutdown(context.Background()) })
	return u, openSubscription(t, u)
}

// natsBroker subscribes on the NATS server of VITRINE_TEST_NATS, with
// native headers (natsv2) so that the CloudEvents attributes are headers.
func natsBroker(t *testing.T, name string) (string, *pubsub.Subscription) {
	brokerServer(t, envNATS, "nats://127.0.0.1:4222", "NATS_SERVER_URL")
	u := "nats://" + name + "?natsv2"
	return u, openSubscription(t, u)
}

// rabbitBroker declares a fanout exchange and a queue bound to it on the
// RabbitMQ server of VITRINE_TEST_RABBIT.
func rabbitBroker(t *testing.T, name string) (string, *pubsub.Subscription) {
	server := brokerServer(t, envRabbit, "amqp://guest:guest@127.0.0.1:5672/", "RABBIT_SERVER_URL")
	conn, err := amqp.Dial(server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declareFanoutQueue(t, conn, name)
	return "rabbit://" + name, openSubscription(t, "rabbit://"+name)
}

// declareFanoutQueue declares, on conn, a fanout exchange name and a queue
// of the same name bound to it (both auto-deleted), and returns the
// channel it used.
func declareFanoutQueue(t *testing.T, conn *amqp.Connection, name string) *amqp.Channel {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare(name, "fanout", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(name, "", name, false, nil); err != nil {
		t.Fatal(err)
	}
	return ch
}

// brokerServer returns the broker address in env, or skips naming env
// (example shows a value), and hands it to gocloud's opener, which reads
// it from opener.
func brokerServer(t *testing.T, env, example, opener string) string {
	server := os.Getenv(env)
	if server == "" {
		t.Skip("set " + env + "=" + example + " to run")
	}
	t.Setenv(opener, server)
	return server
}

func openSubscription(t *testing.T, u string) *pubsub.Subscription {
	t.Helper()
	sub, err := pubsub.OpenSubscription(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Shutdown(context.Background()) })
	return sub
}

// TestEventsPublished changes images through a running App whose
// events.topics are two topics of one broker: every change arrives on
// both, once, in order per subject, in CloudEvents binary mode, with the
// same id on both topics.
func TestEventsPublished(t *testing.T) {
	for _, b := range []struct {
		name   string
		broker eventBroker
		// ordered: the broker's subscriptions keep the order messages were
		// sent in (mempubsub hands them out in map order).
		ordered bool
	}{{"mem", memBroker, false}, {"nats", natsBroker, true}, {"rabbit", rabbitBroker, true}} {
		t.Run(b.name, func(t *testing.T) {
			name := storagetest.UniqueName()
			topic1, sub1 := b.broker(t, name+"_1")
			topic2, sub2 := b.broker(t, name+"_2")
			a, addr := testApp(t, fmt.Sprintf(eventsAppConfig, topic1, topic2))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			want := makeChanges(t, <-addr)
			got1, got2 := receiveEvents(t, sub1, len(want), b.ordered), receiveEvents(t, sub2, len(want), b.ordered)
			for subject, w := range bySubject(want) {
				if g := bySubject(got1)[subject]; !slices.Equal(g, w) {
					t.Errorf("%s received %v, want %v", subject, g, w)
				}
			}
			// Each topic is a sink of its own: the same events, in the same
			// order per subject; subjects may interleave differently.
			for subject, w := range bySubject(want) {
				if g := bySubject(got2)[subject]; !slices.Equal(g, w) {
					t.Errorf("%s received %v on the second topic, want %v", subject, g, w)
				}
			}
			if !sameIDs(got1, got2) {
				t.Errorf("the topics received different events:\n%s\n%s", strings.Join(got1, "\n"), strings.Join(got2, "\n"))
			}
		})
	}
}

const eventsAppConfig = `
accessControl:
  keys:
    - publicKey: events
      privateKey: events-secret
      rules: [{group: all, users: "*"}]
events:
  topics: [%q, %q]
  interval: 20ms
`

// makeChanges uploads two images and changes them through the API at
// base, and returns the events expected ("<subject> <type>"), in the
// order each subject's events must arrive.
func makeChanges(t *testing.T, base string) []string {
	a := upload(t, base, color.NRGBA{R: 255, A: 255})
	b := upload(t, base, color.NRGBA{B: 255, A: 255})
	imgA, imgB := base+"/users/u/images/"+a, base+"/users/u/images/"+b
	call(t, http.MethodPut, imgA+"/metadata", `{"title":"one"}`)
	call(t, http.MethodPost, imgA+"/metadata", `{"tag":"two"}`)
	call(t, http.MethodDelete, imgA+"/metadata", "")
	call(t, http.MethodDelete, imgB, "")
	sa, sb := "users/u/images/"+a, "users/u/images/"+b
	return []string{sa + " io.vitrine.image.added", sb + " io.vitrine.image.added",
		sa + " io.vitrine.metadata.replaced", sa + " io.vitrine.metadata.merged",
		sa + " io.vitrine.metadata.deleted", sb + " io.vitrine.image.deleted"}
}

// bySubject groups "<subject> <type>[ <id>]" lines by subject, keeping
// their order and dropping the id. Events of different subjects may go
// out in another order than their changes: a subject's next event waits
// for the one before it, not for other subjects'.
func bySubject(lines []string) map[string][]string {
	out := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		out[f[0]] = append(out[f[0]], f[1])
	}
	return out
}

// upload posts a 16x16 PNG of c as user u's and returns its identifier.
func upload(t *testing.T, base string, c color.NRGBA) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 16, 16))
	for i := range img.Pix {
		img.Pix[i] = []byte{c.R, c.G, c.B, c.A}[i%4]
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	body := call(t, http.MethodPost, base+"/users/u/images", buf.String())
	var up struct {
		ImageIdentifier string `json:"imageIdentifier"`
	}
	if err := json.Unmarshal(body, &up); err != nil || up.ImageIdentifier == "" {
		t.Fatalf("upload answered %s (%v)", body, err)
	}
	return up.ImageIdentifier
}

// call makes a write signed with the test's key and fails unless it
// succeeds.
func call(t *testing.T, method, url, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	mac := hmac.New(sha256.New, []byte("events-secret"))
	mac.Write([]byte(method + "|" + url + "|events|" + ts))
	req.Header.Set("X-Service-PublicKey", "events")
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", hex.EncodeToString(mac.Sum(nil)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s = %d %s", method, url, res.StatusCode, out.String())
	}
	return out.Bytes()
}

// receiveEvents receives n messages, checks each is a CloudEvent in
// binary mode, and returns "<subject> <type> <id>" of each, in the order
// received, or by ce-time when the broker does not keep the order.
func receiveEvents(t *testing.T, sub *pubsub.Subscription, n int, ordered bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against a hang, not a measure
	defer cancel()
	var out []string
	var times []time.Time
	ids := map[string]bool{}
	for range n {
		m, err := sub.Receive(ctx)
		if err != nil {
			t.Fatalf("after %d of %d events (%v): %v", len(out), n, out, err)
		}
		m.Ack()
		md := m.Metadata
		if md["ce-specversion"] != "1.0" || md["ce-source"] != storage.EventSource || md["content-type"] != "application/json" ||
			ids[md["ce-id"]] || len(md["ce-id"]) != 36 {
			t.Errorf("attributes %v (id seen before: %v)", md, ids[md["ce-id"]])
		}
		ids[md["ce-id"]] = true
		at, err := time.Parse(time.RFC3339Nano, md["ce-time"])
		if err != nil {
			t.Errorf("ce-time: %v", err)
		}
		var data map[string]any
		if err := json.Unmarshal(m.Body, &data); err != nil || data["user"] != "u" || data["imageIdentifier"] == nil {
			t.Errorf("body %s (%v)", m.Body, err)
		}
		i := len(out)
		if !ordered {
			i, _ = slices.BinarySearchFunc(times, at, time.Time.Compare)
			for i < len(times) && !times[i].After(at) {
				i++
			}
		}
		times = slices.Insert(times, i, at)
		out = slices.Insert(out, i, md["ce-subject"]+" "+md["ce-type"]+" "+md["ce-id"])
	}
	return out
}

// TestEventsWritten checks that the stores write event rows only when
// something publishes them (eventsWanted), for the CLI as for the server,
// and that events' settings are checked.
func TestEventsWritten(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		rows       int
		bad        bool
	}{
		{"nothing consumes", "webhooks: {enabled: false}", 0, false},
		{"webhooks (the default)", "", 1, false},
		{"a topic", "events: {topics: [mem://written]}\nwebhooks: {enabled: false}", 1, false},
		{"negative webhook timeout", "webhooks: {timeout: -1s}", 0, true},
		{"retryMax under retryMin", "webhooks: {retryMin: 1m, retryMax: 1s}", 0, true},
		{"empty topic", `events: {topics: [""]}`, 0, true},
		{"negative interval", "events: {interval: -1s}", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := dir + "/vitrine.yaml"
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadConfig(path, dir)
			if c.bad != (err != nil) {
				t.Fatalf("loadConfig: %v", err)
			}
			if c.bad {
				return
			}
			st, err := openDBConfig(context.Background(), cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.db.PutKey(context.Background(), storage.Key{PublicKey: "k", PrivateKey: "p"}); err != nil {
				t.Fatal(err)
			}
			if events, err := st.db.PendingEvents(context.Background(), 0); err != nil || len(events) != c.rows {
				t.Fatalf("%d events (%v), want %d", len(events), err, c.rows)
			}
		})
	}
}
