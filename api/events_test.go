package api_test

import (
	"context"
	"net/http"
	"testing"

	"vitrine/api"
)

func TestStatsListenerAddsCustomData(t *testing.T) {
	e := newEnv(t, testConfig())
	var order []string
	e.srv.Bus.On("stats.*", 10, func(ctx context.Context, ev *api.Event) error {
		order = append(order, "low")
		ev.Stats["answer"] = 42
		return nil
	})
	e.srv.Bus.On("*", 20, func(ctx context.Context, ev *api.Event) error {
		if ev.Name == "stats.get" {
			order = append(order, "high")
		}
		return nil
	})
	r := e.get(e.url + "/stats")
	custom, _ := r.json(t)["custom"].(map[string]any)
	if custom["answer"] != 42.0 || len(order) != 2 || order[0] != "high" {
		t.Fatalf("custom %v, order %v", custom, order)
	}
}

func TestListenerCanRejectRequest(t *testing.T) {
	e := newEnv(t, testConfig())
	e.srv.Bus.On("images.post", 50, func(ctx context.Context, ev *api.Event) error {
		if ev.User() == "alice" {
			return &api.Error{Status: http.StatusForbidden, Msg: "Uploads are closed"}
		}
		return nil
	})
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 4, 4, 1))
	if r.StatusCode != 403 || r.errMessage(t) != "Uploads are closed" {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
}

func TestStatusUnavailable(t *testing.T) {
	e := newEnv(t, testConfig())
	e.db.Close()
	r := e.get(e.url + "/status")
	if m := r.json(t); r.StatusCode != 503 || m["database"] != false || m["storage"] != true {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
}
