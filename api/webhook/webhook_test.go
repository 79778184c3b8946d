package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/vitrine/vitrine/api/webhook"
)

// TestSignVerifiesWithTheStandardLibrary checks Sign against the
// Standard Webhooks reference library, an implementation that is not
// ours: what it verifies, receivers verify.
func TestSignVerifiesWithTheStandardLibrary(t *testing.T) {
	secret := webhook.NewSecret()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"specversion":"1.0","id":"e1"}`)
	now := time.Now()
	sig, err := webhook.Sign(secret, "e1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wh.Sign("e1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if sig != want {
		t.Fatalf("signature %q, the library's %q", sig, want)
	}
	h := http.Header{}
	h.Set("webhook-id", "e1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	if err := wh.Verify(body, h); err != nil {
		t.Fatalf("library refuses our signature: %v", err)
	}
	if err := wh.Verify(append(body, ' '), h); err == nil {
		t.Fatal("library accepts a changed body")
	}
}

func TestSecrets(t *testing.T) {
	for _, s := range []string{"", "whsec_", "secret", "whsec_!!!", "whsec_" + strings.Repeat("QQ", 4)} {
		if err := webhook.CheckSecret(s); err == nil {
			t.Errorf("secret %q accepted", s)
		}
		if _, err := webhook.Sign(s, "id", time.Now(), nil); err == nil {
			t.Errorf("Sign with secret %q did not fail", s)
		}
	}
	a, b := webhook.NewSecret(), webhook.NewSecret()
	if a == b || webhook.CheckSecret(a) != nil || !strings.HasPrefix(a, "whsec_") {
		t.Fatalf("secrets %q %q", a, b)
	}
}

func TestSend(t *testing.T) {
	secret := webhook.NewSecret()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var verified error
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verified = wh.Verify(body, r.Header)
		if r.Header.Get("Content-Type") != webhook.ContentType {
			verified = io.ErrUnexpectedEOF
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, strings.Repeat("x", 5000), http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	m := webhook.Message{ID: "evt-1", Body: []byte(`{"a":1}`)}
	ctx := context.Background()

	if r := webhook.Send(ctx, client, srv.URL+"/ok", secret, m); r.Err != nil || r.Status != 204 || verified != nil {
		t.Fatalf("ok: %+v, verified %v", r, verified)
	}
	r := webhook.Send(ctx, client, srv.URL+"/fail", secret, m)
	if r.Err == nil || r.Status != 503 || len(r.Response) != webhook.ResponseBytes {
		t.Fatalf("fail: status %d err %v response %d bytes", r.Status, r.Err, len(r.Response))
	}
	if r := webhook.Send(ctx, client, srv.URL+"/redirect", secret, m); r.Err == nil || r.Status != 302 {
		t.Fatalf("redirect: %+v", r)
	}
	srv.Close()
	if r := webhook.Send(ctx, client, srv.URL+"/ok", secret, m); r.Err == nil || r.Status != 0 {
		t.Fatalf("closed: %+v", r)
	}
}
