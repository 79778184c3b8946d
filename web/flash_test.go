package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFlashSealedPerSession: a flash opens only in the session that sealed
// it, and its cookie does not carry the text.
func TestFlashSealedPerSession(t *testing.T) {
	ui := &UI{cfg: Config{Prefix: "/admin"}}
	req := func(s Session) *request {
		return &request{ui: ui, w: httptest.NewRecorder(), r: httptest.NewRequest(http.MethodGet, "/admin/", nil), sess: s}
	}
	mine := Session{IDHash: "a", PrivateKey: "private-a"}
	q := req(mine)
	if err := q.setFlash(createdKey{PrivateKey: "the-secret"}); err != nil {
		t.Fatal(err)
	}
	c := q.w.(*httptest.ResponseRecorder).Result().Cookies()[0]
	if c.Name != flashCookie || strings.Contains(c.Value, "the-secret") || !c.HttpOnly {
		t.Fatalf("flash cookie %+v", c)
	}
	var got createdKey
	if err := req(mine).openFlash(c.Value, &got); err != nil || got.PrivateKey != "the-secret" {
		t.Fatalf("own session: %+v %v", got, err)
	}
	for _, other := range []Session{{IDHash: "b", PrivateKey: "private-a"}, {IDHash: "a", PrivateKey: "private-b"}} {
		if err := req(other).openFlash(c.Value, &got); err == nil {
			t.Fatalf("session %+v opened another session's flash", other)
		}
	}
}
