package api_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"testing"

	"vitrine/api"
	"vitrine/filters"
)

// The api's event is what WebAssembly listeners work on.
var _ filters.Event = (*api.Event)(nil)

// source is a ListenerSource whose listeners a test may change between
// requests, as a filter reload does.
type source struct{ subs []api.Subscription }

func (s *source) Subscriptions() []api.Subscription { return s.subs }

func TestUploadListenersReplaceAndTag(t *testing.T) {
	e := newEnv(t, testConfig())
	replacement := pngImage(t, 8, 6, 9)
	src := &source{}
	e.srv.Bus.AddSource(src)
	var seen map[string]any
	src.subs = []api.Subscription{{Patterns: []string{"images.post"}, Listener: func(ctx context.Context, ev *api.Event) error {
		var fe filters.Event = ev
		info, err := fe.ImageInfo(ctx)
		if err != nil {
			return err
		}
		seen = info
		if err := fe.CheckBody(ctx, []byte("not an image")); err == nil {
			t.Error("garbage passed CheckBody")
		}
		if err := fe.CheckBody(ctx, replacement); err != nil {
			return err
		}
		fe.SetBody(replacement)
		md := map[string]any{"tagged": true}
		if err := fe.CheckMetadata(md); err != nil {
			return err
		}
		fe.SetMetadata(md)
		if err := fe.CheckMetadata(map[string]any{"a.b": 1}); err == nil {
			t.Error("a dotted key passed CheckMetadata")
		}
		return nil
	}}}
	orig := pngImage(t, 20, 10, 1)
	id := e.upload(orig)
	sum := md5.Sum(replacement)
	if id != hex.EncodeToString(sum[:]) {
		t.Fatalf("identifier %s is not the MD5 of the replacement", id)
	}
	if seen["width"] != 20 || seen["mime"] != "image/png" {
		t.Fatalf("listener saw %v", seen)
	}
	md := e.get(e.tokenURL("/users/alice/images/"+id+"/metadata", userPriv)).json(t)
	if md["tagged"] != true {
		t.Fatalf("metadata %v", md)
	}
	origSum := md5.Sum(orig)
	list := e.get(e.tokenURL("/users/alice/images?fields[]=originalChecksum&fields[]=width", userPriv)).json(t)
	img := list["images"].([]any)[0].(map[string]any)
	if img["originalChecksum"] != hex.EncodeToString(origSum[:]) || img["width"] != 8.0 {
		t.Fatalf("listing %v", img)
	}
}

func TestListenerFailureStoresNothing(t *testing.T) {
	e := newEnv(t, testConfig())
	src := &source{subs: []api.Subscription{{Patterns: []string{"images.*"}, Listener: func(ctx context.Context, ev *api.Event) error {
		if ev.Name != "images.post" {
			return nil
		}
		ev.SetMetadata(map[string]any{"x": 1})
		return &filters.Error{Kind: filters.KindTimeout, Filter: "slow", Msg: "Filter slow timed out"}
	}}}}
	e.srv.Bus.AddSource(src)
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 4, 4, 1))
	if r.StatusCode != http.StatusGatewayTimeout || r.errMessage(t) != "Filter slow timed out" {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
	list := e.get(e.tokenURL("/users/alice/images", userPriv)).json(t)
	if n := list["search"].(map[string]any)["hits"]; n != 0.0 {
		t.Fatalf("%v images stored after a failed listener", n)
	}
}

func TestSourceListenersOrderAndChange(t *testing.T) {
	e := newEnv(t, testConfig())
	var order []string
	rec := func(name string) api.Listener {
		return func(ctx context.Context, ev *api.Event) error { order = append(order, name); return nil }
	}
	e.srv.Bus.On("stats.get", 10, rec("native10"))
	src := &source{subs: []api.Subscription{
		{Patterns: []string{"stats.get", "*"}, Priority: 10, Listener: rec("guest10")},
		{Patterns: []string{"*.get"}, Priority: 20, Listener: rec("guest20")},
		{Patterns: []string{"images.post"}, Priority: 30, Listener: rec("never")},
	}}
	e.srv.Bus.AddSource(src)
	e.get(e.url + "/stats")
	if got := joined(order); got != "guest20,native10,guest10" {
		t.Fatalf("order %s", got)
	}
	order = nil
	src.subs = src.subs[:1]
	e.get(e.url + "/stats")
	if got := joined(order); got != "native10,guest10" {
		t.Fatalf("after a change: %s", got)
	}
}

func joined(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

func TestMetadataDocumentListener(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(pngImage(t, 4, 4, 2))
	e.srv.Bus.AddSource(&source{subs: []api.Subscription{{Patterns: []string{"metadata.put"}, Listener: func(ctx context.Context, ev *api.Event) error {
		doc, err := ev.Metadata(ctx)
		if err != nil {
			return err
		}
		ev.SetMetadata(map[string]any{"title": doc["title"], "checked": true})
		return nil
	}}}})
	r := e.signed(http.MethodPut, "/users/alice/images/"+id+"/metadata", userKey, userPriv, []byte(`{"title":"x","drop":1}`))
	if r.StatusCode != 200 {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
	md := e.get(e.tokenURL("/users/alice/images/"+id+"/metadata", userPriv)).json(t)
	if md["checked"] != true || md["title"] != "x" || md["drop"] != nil {
		t.Fatalf("metadata %v", md)
	}
}

func TestFiltersResources(t *testing.T) {
	e := newEnv(t, testConfig())
	r := e.get(e.tokenURL("/filters?publicKey="+adminKey, adminPriv))
	if list, ok := r.json(t)["filters"].([]any); r.StatusCode != 200 || !ok || len(list) != 0 {
		t.Fatalf("%d %s", r.StatusCode, r.body)
	}
	r = e.signed(http.MethodPost, "/filters/reload", adminKey, adminPriv, nil)
	if r.StatusCode != 200 {
		t.Fatalf("reload: %d %s", r.StatusCode, r.body)
	}
	r = e.get(e.tokenURL("/filters?publicKey="+userKey, userPriv))
	if r.StatusCode != http.StatusBadRequest && r.StatusCode != http.StatusForbidden {
		t.Fatalf("a read-write key listed filters: %d %s", r.StatusCode, r.body)
	}
}
