package main

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
)

// statusError is what api reads from an error to answer it.
type statusError interface {
	HTTPStatus() int
	RetryAfter() time.Duration
	PublicMessage() string
}

// TestAppDeployedFilterNotRunnable: a filter the active set holds that this
// instance has not loaded yet answers 503 with Retry-After, never 400 "not
// registered"; once loaded here as unavailable (it asks for the clock,
// which this instance's filters.allow does not grant), it still answers
// 503 naming the capability, and /readyz stays 200. A name neither active
// nor deployed answers 400 as ever.
func TestAppDeployedFilterNotRunnable(t *testing.T) {
	// Why an hour: the sync passes at start and then only when woken, so
	// the step "not loaded here yet" lasts until the test wakes it.
	a, addr := testApp(t, "filters:\n  syncInterval: 1h\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	base := <-addr
	waitStatus(t, base+"/readyz", http.StatusOK)

	deploy := func(name, capabilities string) {
		t.Helper()
		manifest := []byte(`{"name":"` + name + `","version":"1","abi":1,"kind":"transformation"` + capabilities + `}`)
		version := filters.BundleVersion(manifest, minimalTransformation)
		if err := a.st.blobs.Put(ctx, storage.FilterBlobKey(version), api.FilterBundleTar(manifest, minimalTransformation)); err != nil {
			t.Fatal(err)
		}
		if err := a.st.db.AddFilterVersion(ctx, &storage.FilterVersion{Name: name, Version: version, Manifest: manifest, Size: 1}); err != nil {
			t.Fatal(err)
		}
		_, err := a.st.db.ChangeFilterSet(ctx, "filters.put", name, nil, func(set map[string]storage.FilterDeployment) error {
			set[name] = storage.FilterDeployment{Version: version, Enabled: true}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	render := func(name string) error {
		_, err := a.eng.ParseChain([]string{name})
		return err
	}
	// want503 checks that a render of name answers 503 with Retry-After
	// saying one of says.
	want503 := func(step, name string, says ...string) {
		t.Helper()
		var se statusError
		err := render(name)
		if !errors.As(err, &se) || se.HTTPStatus() != http.StatusServiceUnavailable || se.RetryAfter() <= 0 ||
			!slices.ContainsFunc(says, func(w string) bool { return strings.Contains(se.PublicMessage(), w) }) {
			t.Fatalf("%s: a render of %s = %v, want 503 with Retry-After saying one of %q", step, name, err, says)
		}
	}

	deploy("clocky", `,"capabilities":["clock"]`)
	deploy("plain", "")
	want503("deployed, not loaded here yet", "clocky", "has not loaded on this instance yet")
	// Why either: the miss of clocky woke the sync, which may have handed
	// plain to the host already; both answers are a 503 to retry.
	want503("deployed, not loaded here yet", "plain", "has not loaded on this instance yet", "is still loading")
	var se interface{ HTTPStatus() int }
	if err := render("nothere"); !errors.As(err, &se) || se.HTTPStatus() != http.StatusBadRequest {
		t.Fatalf("a render of a name neither active nor deployed = %v, want 400", err)
	}

	a.sync.wake.Wake()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if render("plain") == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plain did not load: %+v", a.fh.Current().Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p, ok := a.fh.Current().Unavailable("clocky"); !ok || p.Name() != "clocky" {
		t.Fatalf("clocky is not unavailable here: %+v", a.fh.Current().Status())
	}
	want503("unavailable here", "clocky", `capability "clock"`)
	if code := get(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d with a deployed filter this instance cannot run, want 200", code)
	}
}
