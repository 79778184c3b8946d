package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"gocloud.dev/pubsub"
	_ "gocloud.dev/pubsub/natspubsub"
	_ "gocloud.dev/pubsub/rabbitpubsub"

	"github.com/vitrine/vitrine/e2e/faultproxy"
)

// stream is what one consumer received: each event's "<type> <id>" per
// subject, in the order received, and how often each id came.
type stream struct {
	mu        sync.Mutex
	bySubject map[string][]string
	ids       map[string]int
	arrived   atomic.Int64
}

func newStream() *stream { return &stream{bySubject: map[string][]string{}, ids: map[string]int{}} }

// add records an event of an image; a repeat (the same id again) is
// counted, not listed twice. Events of other subjects (the subscription's
// own creation) are not the test's changes.
func (s *stream) add(subject, typ, id string) {
	if !strings.HasPrefix(subject, "users/") {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[id]++
	if s.ids[id] == 1 {
		s.bySubject[subject] = append(s.bySubject[subject], typ+" "+id)
		s.arrived.Add(1)
	}
}

// count returns how often id was received.
func (s *stream) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

// types returns the types a subject received, in order.
func (s *stream) types(subject string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.bySubject[subject] {
		out = append(out, strings.Fields(e)[0])
	}
	return out
}

// eventReceiver is a webhook receiver on a fixed loopback address that
// can go down (its listener closed: connections refused) and come back.
type eventReceiver struct {
	t      *testing.T
	addr   string
	secret string
	wh     *standardwebhooks.Webhook
	got    *stream
	bad    atomic.Int64
	// hold, when set, is called before answering; it may block, and when
	// it returns false the request is answered 503 and not taken.
	hold atomic.Pointer[func(id string) bool]

	mu  sync.Mutex
	srv *http.Server
	// lags are each taken delivery's event time and its arrival minus
	// that time.
	lags []eventLag
}

type eventLag struct {
	at  time.Time
	lag time.Duration
}

// lagsSince returns, sorted, the lags of the deliveries of events made
// at or after since.
func (r *eventReceiver) lagsSince(since time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, l := range r.lags {
		if !l.at.Before(since) {
			out = append(out, l.lag)
		}
	}
	slices.Sort(out)
	return out
}

// quantile is the q-quantile of sorted (0 when empty).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func startEventReceiver(t *testing.T) *eventReceiver {
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &eventReceiver{t: t, addr: freeAddr(t), secret: secret, wh: wh, got: newStream()}
	r.up()
	t.Cleanup(r.down)
	return r
}

func (r *eventReceiver) up() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve)}
	srv := r.srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (r *eventReceiver) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		_ = r.srv.Close()
		r.srv = nil
	}
}

func (r *eventReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := r.wh.Verify(body, req.Header); err != nil {
		r.bad.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev struct {
		ID, Type, Subject string
		Time              time.Time
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != req.Header.Get("webhook-id") {
		r.bad.Add(1)
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	if h := r.hold.Load(); h != nil && !(*h)(ev.ID) {
		http.Error(w, "not taken", http.StatusServiceUnavailable)
		return
	}
	r.got.add(ev.Subject, ev.Type, ev.ID)
	r.mu.Lock()
	r.lags = append(r.lags, eventLag{ev.Time, time.Since(ev.Time)})
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// consume receives every message of sub into s until ctx ends.
func consume(ctx context.Context, sub *pubsub.Subscription, s *stream) {
	for {
		m, err := sub.Receive(ctx)
		if err != nil {
			return
		}
		m.Ack()
		s.add(m.Metadata["ce-subject"], m.Metadata["ce-type"], m.Metadata["ce-id"])
	}
}

// brokers returns the NATS and RabbitMQ topic URLs of a fresh subject and
// exchange, with a subscription to each feeding its stream, or skips
// naming the variables to set.
func brokers(t *testing.T, ctx context.Context, name string) (topics []string, nats, rabbit *stream) {
	natsURL, rabbitURL := os.Getenv("VITRINE_TEST_NATS"), os.Getenv("VITRINE_TEST_RABBIT")
	if natsURL == "" || rabbitURL == "" {
		t.Skip("set VITRINE_TEST_NATS=nats://127.0.0.1:4222 and VITRINE_TEST_RABBIT=amqp://guest:guest@127.0.0.1:5672/ to run")
	}
	t.Setenv("NATS_SERVER_URL", natsURL)
	t.Setenv("RABBIT_SERVER_URL", rabbitURL)
	conn, err := amqp.Dial(rabbitURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
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
	nats, rabbit = newStream(), newStream()
	for _, c := range []struct {
		url string
		s   *stream
	}{{"nats://" + name + "?natsv2", nats}, {"rabbit://" + name, rabbit}} {
		sub, err := pubsub.OpenSubscription(ctx, c.url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Shutdown(context.Background()) })
		go consume(ctx, sub, c.s)
	}
	return []string{"nats://" + name + "?natsv2", "rabbit://" + name}, nats, rabbit
}

// proxyEnv puts a fault proxy in front of the broker the environment
// variable env names, for the instances the test starts after it.
func proxyEnv(t *testing.T, env string) *faultproxy.Proxy {
	u, err := url.Parse(os.Getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	px := faultproxy.Start(t, u.Host)
	u.Host = px.Addr
	t.Setenv(env, u.String())
	return px
}

// TestEventsEveryConsumer runs two instances on one PostgreSQL database
// with a webhook subscription, a NATS subject and a RabbitMQ exchange, and
// checks that none of them loses an event: through an instance killed
// with SIGKILL while it delivers, a receiver down for two minutes while
// changes go on, 1,000 mixed changes made on both instances at once, and
// both brokers cut for a minute (NATS refused, RabbitMQ stalled) while 500
// more are made, during which the webhook still gets every change.
// Each consumer gets every event, each subject's in the order its changes
// were made, every webhook signed, duplicates only with the same id.
func TestEventsEveryConsumer(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := uniqueName("events")
	topics, nats, rabbit := brokers(t, ctx, name)
	// The instances reach both brokers through fault proxies (the test's
	// own subscriptions do not), so that a step can cut them.
	natsProxy, rabbitProxy := proxyEnv(t, "NATS_SERVER_URL"), proxyEnv(t, "RABBIT_SERVER_URL")
	hooks := startEventReceiver(t)
	// A CDN purger of the generic kind (POST {"tags": [...]}): a sink of
	// its own beside the webhook and the buses.
	var purges atomic.Int64
	purger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		purges.Add(1)
	}))
	t.Cleanup(purger.Close)
	user := uniqueName("ev")
	k := key{Public: user, Private: "private-" + user}
	admin := key{Public: "admin-" + user, Private: "admin-private-" + user}
	topicsYAML, _ := json.Marshal(topics)
	cfg := fmt.Sprintf(`database: %q
storage: %q
secret: every-instance-has-the-same
events:
  topics: %s
  interval: 100ms
webhooks:
  timeout: 5s
  retryMin: 1s
  retryMax: 8s
outbound:
  allow: [127.0.0.1]
cdn:
  purgers: [{type: http, url: %q}]
accessControl:
  keys:
    - publicKey: %s
      privateKey: %s
      rules: [{users: [%s], group: read-write}]
    - publicKey: %s
      privateKey: %s
      rules: [{users: ["*"], group: all}]
`, dsn, "file://"+t.TempDir(), topicsYAML, purger.URL+"/purge", k.Public, k.Private, user, admin.Public, admin.Private)

	a := startServer(t, cfg)
	// Instances started inside a step live until the whole test ends.
	parent := t
	startInstance := func(t *testing.T) *server {
		t.Helper()
		s, err := tryStart(parent, cfg, parent.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	created := a.writeJSON(t, http.MethodPost, "/webhooks", map[string]any{
		"url": "http://" + hooks.addr + "/hook", "events": []string{"io.vitrine.image.*", "io.vitrine.metadata.*", "io.vitrine.shorturl.*"},
		"users": []string{user}, "secret": hooks.secret}, admin)
	wantStatus(t, "POST /webhooks", created, http.StatusCreated)
	want := &changes{bySubject: map[string][]string{}}

	t.Run("KilledWhileDelivering", func(t *testing.T) {
		// The receiver holds the first delivery; the only instance dies
		// with it in flight, its event committed and not delivered.
		inFlight, release := make(chan string, 1), make(chan struct{})
		hold := func(id string) bool {
			select {
			case inFlight <- id:
				<-release
				return false // its sender is dead: it never hears an answer
			default:
				return true
			}
		}
		hooks.hold.Store(&hold)
		id := want.upload(t, a, k, user, 1)
		var held string
		select {
		case held = <-inFlight:
		case <-time.After(time.Minute): // a guard against a hang, not a measure
			t.Fatal("no delivery reached the receiver")
		}
		_ = a.cmd.Process.Signal(syscall.SIGKILL)
		<-a.done
		a.stopped = true
		close(release)
		hooks.hold.Store(nil)
		// The other instance delivers it (again, with the same id) once
		// the dead instance's claim lapses.
		b := startInstance(t)
		subject := "users/" + user + "/images/" + id
		waitUntil(t, "the held event delivered by the other instance", func() bool {
			return slices.Contains(hooks.got.types(subject), "io.vitrine.image.added")
		})
		if n := hooks.got.count(held); n < 1 {
			t.Fatalf("the held event %s was not delivered", held)
		}
		a = b
	})

	t.Run("ReceiverDownTwoMinutes", func(t *testing.T) {
		hooks.down()
		downFor := 2 * time.Minute
		if d, err := time.ParseDuration(os.Getenv("VITRINE_E2E_RECEIVER_DOWN")); err == nil {
			downFor = d
		}
		end := time.Now().Add(downFor)
		for i := 0; time.Now().Before(end); i++ {
			want.upload(t, a, k, user, byte(10+i%200))
			time.Sleep(2 * time.Second)
		}
		hooks.up()
	})

	t.Run("ThousandChangesOnTwoInstances", func(t *testing.T) {
		c := startServer(t, cfg)
		servers := []*server{a, c}
		var wg sync.WaitGroup
		var failed atomic.Int64
		const workers, perWorker = 8, 125 // 1,000 changes
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for n := 0; n < perWorker; {
					s := servers[rng.IntN(2)]
					done, err := want.step(s, k, user, w, rng)
					if err != nil {
						failed.Add(1)
						t.Errorf("worker %d: %v", w, err)
						return
					}
					n += done
				}
			}()
		}
		wg.Wait()
		if failed.Load() > 0 {
			t.FailNow()
		}
	})

	t.Run("BrokersCutWhileChanging", func(t *testing.T) {
		// NATS refused and RabbitMQ stalled for a minute while 500 changes
		// are made on both instances: the webhook gets every one of them
		// meanwhile; the brokers catch up once they are back (checked by
		// the next step).
		cutFor := time.Minute
		if d, err := time.ParseDuration(os.Getenv("VITRINE_E2E_BROKER_CUT")); err == nil {
			cutFor = d
		}
		before := hooks.got.arrived.Load()
		purgesBefore := purges.Load()
		natsProxy.Set(faultproxy.Refuse)
		rabbitProxy.Set(faultproxy.Stall)
		cut := time.Now()
		c := startServer(t, cfg)
		servers := []*server{a, c}
		made := 0
		rng := rand.New(rand.NewPCG(44, 7))
		for made < 500 {
			done, err := want.step(servers[made%2], k, user, made%8, rng)
			if err != nil {
				t.Fatal(err)
			}
			made += done
		}
		waitUntil(t, "the webhook receiving every change made while the brokers are cut", func() bool {
			return hooks.got.arrived.Load() >= before+int64(made)
		})
		// Every change but a short URL's creation purges something: at least
		// half of them reach the purger while the brokers are still cut.
		waitUntil(t, "the purger receiving purges while the brokers are cut", func() bool {
			return purges.Load()-purgesBefore >= int64(made/2)
		})
		lags := hooks.lagsSince(cut)
		t.Logf("changes made while cut: %d webhook deliveries, lag p50 %s, p99 %s, max %s; %d purges", len(lags),
			quantile(lags, .5).Round(time.Millisecond), quantile(lags, .99).Round(time.Millisecond),
			quantile(lags, 1).Round(time.Millisecond), purges.Load()-purgesBefore)
		if time.Since(cut) > cutFor {
			t.Logf("the webhook got the %d changes in %s, past the cut's %s", made, time.Since(cut), cutFor)
		}
		time.Sleep(time.Until(cut.Add(cutFor)))
		natsProxy.Set(faultproxy.Pass)
		rabbitProxy.Set(faultproxy.Pass)
		t.Logf("%d changes made and delivered to the webhook while the brokers were cut for %s", made, time.Since(cut).Round(time.Second))
	})

	t.Run("EveryConsumerGotEverything", func(t *testing.T) {
		total := want.total()
		t.Logf("%d changes of %d images", total, len(want.bySubject))
		for _, c := range []struct {
			name string
			s    *stream
		}{{"webhook", hooks.got}, {"nats", nats}, {"rabbit", rabbit}} {
			waitUntil(t, c.name+" receiving every event", func() bool { return c.s.arrived.Load() >= int64(total) })
			time.Sleep(time.Second) // so that an event too many, if any, is counted below
			want.mu.Lock()
			for subject, types := range want.bySubject {
				if got := c.s.types(subject); !slices.Equal(got, types) {
					t.Errorf("%s: %s received %v, want %v", c.name, subject, got, types)
				}
			}
			want.mu.Unlock()
			if c.s.arrived.Load() != int64(total) {
				t.Errorf("%s received %d events, want %d", c.name, c.s.arrived.Load(), total)
			}
		}
		if n := hooks.bad.Load(); n > 0 {
			t.Errorf("%d webhook requests failed verification", n)
		}
		// Every webhook id's first delivery and the brokers' ids are the
		// same events.
		want.mu.Lock()
		defer want.mu.Unlock()
		for subject := range want.bySubject {
			hooks.got.mu.Lock()
			h := slices.Clone(hooks.got.bySubject[subject])
			hooks.got.mu.Unlock()
			nats.mu.Lock()
			n := slices.Clone(nats.bySubject[subject])
			nats.mu.Unlock()
			if !slices.Equal(h, n) {
				t.Errorf("%s: the webhook got %v, NATS %v", subject, h, n)
			}
		}
	})
}

// waitUntil polls cond, failing after five minutes (a guard against a
// hang, not a measure).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited five minutes for %s", what)
		}
	}
}

// changes are the events the test's changes must produce, per subject in
// the order made. Each worker changes only its own images, so each
// subject's order is the order of one goroutine's requests.
type changes struct {
	mu        sync.Mutex
	bySubject map[string][]string
	// live are each worker's images that still exist; uploads counts each
	// worker's uploads, so that every upload is new bytes.
	live    [8][]string
	uploads [8]int
}

func (c *changes) record(user, id, typ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	subject := "users/" + user + "/images/" + id
	c.bySubject[subject] = append(c.bySubject[subject], typ)
}

func (c *changes) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.bySubject {
		n += len(l)
	}
	return n
}

// upload adds an image through s and records its event.
func (c *changes) upload(t *testing.T, s *server, k key, user string, seed byte) string {
	t.Helper()
	r := s.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 24, 16, seed), k)
	wantStatus(t, "upload", r, http.StatusCreated)
	var up struct{ ImageIdentifier string }
	r.JSON(t, &up)
	c.record(user, up.ImageIdentifier, "io.vitrine.image.added")
	return up.ImageIdentifier
}

// step makes one random change of worker w's images through s and
// records its event; it returns how many changes it made.
func (c *changes) step(s *server, k key, user string, w int, rng *rand.Rand) (int, error) {
	c.mu.Lock()
	live := slices.Clone(c.live[w])
	c.uploads[w]++
	seq := c.uploads[w]
	c.mu.Unlock()
	sign := func(r *http.Request) { signWrite(r, k) }
	if len(live) == 0 || rng.IntN(5) == 0 {
		status, body, _, err := rawDo(http.DefaultClient, http.MethodPost, s.URL+"/users/"+user+"/images",
			pngBytes(100+w, seq), sign)
		if err != nil || status != http.StatusCreated {
			return 0, fmt.Errorf("upload: %d %s %v", status, body, err)
		}
		var up struct{ ImageIdentifier string }
		if err := json.Unmarshal(body, &up); err != nil {
			return 0, err
		}
		if slices.Contains(live, up.ImageIdentifier) {
			return 0, nil // the same bytes again: no change, no event
		}
		c.record(user, up.ImageIdentifier, "io.vitrine.image.added")
		c.mu.Lock()
		c.live[w] = append(c.live[w], up.ImageIdentifier)
		c.mu.Unlock()
		return 1, nil
	}
	id := live[rng.IntN(len(live))]
	path := "/users/" + user + "/images/" + id
	var method, typ, body string
	switch rng.IntN(5) {
	case 0:
		method, typ, body = http.MethodPut, "io.vitrine.metadata.replaced", fmt.Sprintf(`{"n":%d}`, rng.IntN(1000))
		path += "/metadata"
	case 1:
		method, typ, body = http.MethodPost, "io.vitrine.metadata.merged", fmt.Sprintf(`{"m":%d}`, rng.IntN(1000))
		path += "/metadata"
	case 2:
		method, typ = http.MethodDelete, "io.vitrine.metadata.deleted"
		path += "/metadata"
	case 3:
		method, typ, body = http.MethodPost, "io.vitrine.shorturl.created", fmt.Sprintf(`{"user":%q,"imageIdentifier":%q,"query":"?t[]=thumbnail:width=%d"}`, user, id, 10+rng.IntN(60000))
		path += "/shorturls"
	default:
		method, typ = http.MethodDelete, "io.vitrine.image.deleted"
		c.mu.Lock()
		c.live[w] = slices.DeleteFunc(c.live[w], func(s string) bool { return s == id })
		c.mu.Unlock()
	}
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	status, resp, _, err := rawDo(http.DefaultClient, method, s.URL+path, b, sign)
	if err != nil || status >= 300 {
		return 0, fmt.Errorf("%s %s: %d %s %v", method, path, status, resp, err)
	}
	if method == http.MethodPost && strings.HasSuffix(path, "/shorturls") && status != http.StatusCreated {
		return 0, nil // that short URL existed: no change, no event
	}
	c.record(user, id, typ)
	return 1, nil
}
