package api_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
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
	tooWide := pngImage(t, engine.DefaultMaxSide+1, 1, 2)
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
		// The filters host tells "too large" (ERR_LIMIT) by the status 413.
		var st interface{ HTTPStatus() int }
		if err := fe.CheckBody(ctx, tooWide); !errors.As(err, &st) || st.HTTPStatus() != http.StatusRequestEntityTooLarge {
			t.Errorf("CheckBody of a %dx1 image: %v, want a 413", engine.DefaultMaxSide+1, err)
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

// TestEventImageAndMetadata pins what a listener reads of each kind of
// request (wasm-sdk/ABI.md section 5): the image of an upload or of the
// stored image a route names, and the metadata so far on images.post, the
// client's document on metadata.put and metadata.post, the stored metadata
// on other routes of an existing image, nothing elsewhere.
func TestEventImageAndMetadata(t *testing.T) {
	e := newEnv(t, testConfig())
	upload := pngImage(t, 6, 4, 3)
	id := e.upload(pngImage(t, 5, 3, 4))
	bare := e.upload(pngImage(t, 7, 3, 4))
	if r := e.signed(http.MethodPut, "/users/alice/images/"+id+"/metadata", userKey, userPriv, []byte(`{"stored":1}`)); r.StatusCode != 200 {
		t.Fatalf("PUT metadata: %d %s", r.StatusCode, r.body)
	}
	var (
		mu   sync.Mutex
		info map[string]any
		md   map[string]any
	)
	// Above authentication, and stopping every request there.
	e.srv.Bus.AddSource(&source{subs: []api.Subscription{{Patterns: []string{"*"}, Priority: 1000,
		Listener: func(ctx context.Context, ev *api.Event) error {
			mu.Lock()
			defer mu.Unlock()
			var err error
			if info, err = ev.ImageInfo(ctx); err != nil {
				return err
			}
			if md, err = ev.Metadata(ctx); err != nil {
				return err
			}
			return &api.Error{Status: http.StatusTeapot, Msg: "recorded"}
		}}}})
	img, gone := "/users/alice/images/"+id, "/users/alice/images/gone"
	stored, sent := `{"stored":1}`, `{"sent":1}`
	cases := []struct {
		method, path string
		body         []byte
		width        int // of the image in the event; 0: none
		metadata     string
	}{
		{"POST", "/users/alice/images", upload, 6, `{}`},
		{"GET", img + ".png", nil, 5, stored},
		{"HEAD", img, nil, 5, stored},
		{"DELETE", img, nil, 5, stored},
		{"GET", img + "/metadata", nil, 5, stored},
		{"DELETE", img + "/metadata", nil, 5, stored},
		{"PUT", img + "/metadata", []byte(sent), 5, sent},
		{"POST", img + "/meta", []byte(sent), 5, sent},
		{"POST", img + "/shorturls", []byte(`{}`), 5, stored},
		{"GET", img + "/shorturls/abcdefg", nil, 5, stored},
		{"GET", "/users/alice/images/" + bare + ".png", nil, 7, `{}`},
		{"GET", gone + ".png", nil, 0, "null"},
		{"GET", gone + "/metadata", nil, 0, "null"},
		{"PUT", gone + "/metadata", []byte(sent), 0, sent},
		{"GET", "/users/alice/images", nil, 0, "null"},
		{"GET", "/users/alice", nil, 0, "null"},
		{"GET", "/stats", nil, 0, "null"},
		{"GET", "/s/abcdefg", nil, 0, "null"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			if r := e.signed(c.method, c.path, userKey, userPriv, c.body); r.StatusCode != http.StatusTeapot {
				t.Fatalf("%d %s: the listener did not run", r.StatusCode, r.body)
			}
			mu.Lock()
			defer mu.Unlock()
			width, _ := info["width"].(int)
			if info != nil && (width == 0 || info["mime"] != "image/png" || info["height"] == nil || info["size"] == nil) {
				t.Fatalf("image %v", info)
			}
			if width != c.width {
				t.Fatalf("image %v, want width %d", info, c.width)
			}
			if b, _ := json.Marshal(md); string(b) != c.metadata {
				t.Fatalf("metadata %s, want %s", b, c.metadata)
			}
		})
	}
}

// TestListenerMetadataStored pins what a listener's metadata does to what
// is stored: on images.post the documents of several listeners merge, on
// metadata.put a listener's document is stored instead of the client's,
// and on metadata.post it is merged into the stored metadata instead of
// the client's.
func TestListenerMetadataStored(t *testing.T) {
	cases := []struct {
		name   string
		set    []map[string]any // by listener, in order
		method string           // "" for the upload itself
		want   string
	}{
		{"images.post merges", []map[string]any{{"a": 1, "b": 1}, {"b": 2}}, "", `{"a":1,"b":2}`},
		{"metadata.put replaces", []map[string]any{{"set": 1}}, http.MethodPut, `{"set":1}`},
		{"metadata.post replaces the document merged into the stored one", []map[string]any{{"set": 1}}, http.MethodPost, `{"old":1,"set":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, testConfig())
			event := "images.post"
			if c.method != "" {
				event = "metadata." + strings.ToLower(c.method)
			}
			var subs []api.Subscription
			for i, md := range c.set {
				subs = append(subs, api.Subscription{Patterns: []string{event}, Priority: -i, Listener: func(ctx context.Context, ev *api.Event) error {
					ev.SetMetadata(md)
					return nil
				}})
			}
			listeners := &source{}
			e.srv.Bus.AddSource(listeners)
			if c.method == "" {
				listeners.subs = subs
			}
			id := e.upload(pngImage(t, 4, 4, 5))
			if c.method != "" {
				if r := e.signed(http.MethodPut, "/users/alice/images/"+id+"/metadata", userKey, userPriv, []byte(`{"old":1}`)); r.StatusCode != 200 {
					t.Fatalf("PUT: %d %s", r.StatusCode, r.body)
				}
				listeners.subs = subs
				if r := e.signed(c.method, "/users/alice/images/"+id+"/metadata", userKey, userPriv, []byte(`{"sent":1}`)); r.StatusCode != 200 {
					t.Fatalf("%s: %d %s", c.method, r.StatusCode, r.body)
				}
			}
			md := e.get(e.tokenURL("/users/alice/images/"+id+"/metadata", userPriv)).json(t)
			if b, _ := json.Marshal(md); string(b) != c.want {
				t.Fatalf("stored %s, want %s", b, c.want)
			}
		})
	}
}

// TestLaterListenersSeeReplacement pins that a listener on images.post
// reads the upload as earlier listeners left it: its bytes and its image
// description.
func TestLaterListenersSeeReplacement(t *testing.T) {
	e := newEnv(t, testConfig())
	replacement := pngImage(t, 9, 7, 6)
	var (
		mu    sync.Mutex
		width any
		body  []byte
	)
	e.srv.Bus.AddSource(&source{subs: []api.Subscription{
		{Patterns: []string{"images.post"}, Priority: 10, Listener: func(ctx context.Context, ev *api.Event) error {
			if _, err := ev.ImageInfo(ctx); err != nil { // the original, read first
				return err
			}
			if err := ev.CheckBody(ctx, replacement); err != nil {
				return err
			}
			ev.SetBody(replacement)
			return nil
		}},
		{Patterns: []string{"images.post"}, Priority: 5, Listener: func(ctx context.Context, ev *api.Event) error {
			mu.Lock()
			defer mu.Unlock()
			info, err := ev.ImageInfo(ctx)
			if err != nil {
				return err
			}
			width = info["width"]
			body, err = ev.Body(ctx)
			return err
		}},
	}})
	e.upload(pngImage(t, 20, 10, 1))
	mu.Lock()
	defer mu.Unlock()
	if width != 9 || !bytes.Equal(body, replacement) {
		t.Fatalf("the later listener saw width %v and %d bytes, want the replacement's 9 and %d", width, len(body), len(replacement))
	}
}
