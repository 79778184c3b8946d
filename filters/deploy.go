package filters

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The sources of a filter (Status.Source).
const (
	// SourceDir is a folder of Config.Dir, read by this instance only.
	SourceDir = "dir"
	// SourceAPI is a bundle deployed through the API, which every
	// instance loads (Host.Deploy).
	SourceAPI = "api"
)

// canarySuffix marks the key of a canary version in a Set: a filter name
// never holds "@", so it cannot clash with one.
const canarySuffix = "@canary"

// CanaryKey is the key under which a Set holds the canary version of the
// filter name.
func CanaryKey(name string) string { return name + canarySuffix }

// IsCanaryKey reports whether key names a canary version.
func IsCanaryKey(key string) bool { return strings.HasSuffix(key, canarySuffix) }

// Bundle is one version of a filter deployed through the API: its name,
// its version (BundleVersion of Manifest and Wasm) and its two files.
type Bundle struct {
	Name     string
	Version  string
	Manifest []byte
	Wasm     []byte
}

// source checks the bundle's size and version and makes it a source.
func (b Bundle) source(maxModule int64) (*source, error) {
	if int64(len(b.Wasm)) > maxModule {
		return nil, fmt.Errorf("filter.wasm is %d bytes, over the limit of %d bytes (filters.maxModuleBytes)", len(b.Wasm), maxModule)
	}
	v := BundleVersion(b.Manifest, b.Wasm)
	if b.Version != "" && b.Version != v {
		return nil, fmt.Errorf("the bundle's content is version %s, not %s", v, b.Version)
	}
	return &source{dir: "api:" + b.Name, name: b.Name, manifest: b.Manifest, wasm: b.Wasm, hash: v[:32],
		origin: SourceAPI, version: v}, nil
}

// Deploy makes bundles, by key (a filter's name, or CanaryKey of it for
// its canary), the filters deployed through the API, and loads them as
// Reload loads a folder's: unchanged ones are kept, changed and new ones
// load in the background while their old version serves, removed ones are
// dropped. A bundle's name wins over a folder of Config.Dir of the same
// name. It returns at once; Wait waits for what it queued.
func (h *Host) Deploy(bundles map[string]Bundle) (Wait, error) {
	h.mu.Lock()
	h.pushed = make(map[string]Bundle, len(bundles))
	for k, b := range bundles {
		h.pushed[k] = b
	}
	h.mu.Unlock()
	jobs, err := h.scan()
	return Wait{jobs}, err
}

// Wait is the loads a Deploy queued.
type Wait struct{ jobs []*job }

// Wait waits until every load has finished or ctx ends.
func (w Wait) Wait(ctx context.Context) { wait(ctx, w.jobs) }

// Check loads b on its own exactly as a reload would (manifest, limits,
// compiling into the host's compilation cache and starting
// within Config.CompileTimeout, at low priority, one Check at a time),
// then closes it: what the API does
// before a version may become active. The error says why it is refused;
// a *RefusedError when the bundle is at fault.
func (h *Host) Check(ctx context.Context, b Bundle) (*Manifest, error) {
	select {
	case h.checking <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.checking }()
	src, err := b.source(h.cfg.MaxModuleBytes)
	if err != nil {
		return nil, &RefusedError{Err: loadErr(b.Name, err)}
	}
	h.mu.Lock()
	open := h.startCompiling()
	h.mu.Unlock()
	if !open {
		return nil, errHostClosed
	}
	// Compiled into the host's cache, so that the load of the same module
	// that Deploy queues next finds it there and does not compile it again.
	// Why every capability granted: what an instance grants is its own
	// (filters.allow); one that does not grant what the bundle asks for
	// lists it as unavailable (StateUnavailable), the others run it.
	cfg := h.cfg
	cfg.Allow = []string{CapClock, CapRandom}
	f, finished, err := loadWithin(ctx, cfg, h.cache, src, nil, true)
	go func() {
		<-finished
		h.doneCompiling()
	}()
	if err != nil {
		if ctx.Err() != nil && !errors.As(err, new(*deadlineError)) {
			return nil, err
		}
		return nil, &RefusedError{Err: loadErr(b.Name, err)}
	}
	defer f.close()
	return f.manifest, nil
}

// RefusedError is a bundle Check refused: a client's error (400) whose
// message says why.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// HTTPStatus is 400: the bundle is at fault.
func (e *RefusedError) HTTPStatus() int { return 400 }

// PublicMessage says why the bundle was refused.
func (e *RefusedError) PublicMessage() string { return e.Err.Error() }

// CanaryBucket places subject (user/identifier) in one of 100 buckets by
// its SHA-256: a canary at p percent serves the subjects in buckets below
// p, so one image always gets the same version, and raising p only moves
// images from the main version to the canary.
func CanaryBucket(subject string) int {
	sum := sha256.Sum256([]byte(subject))
	return int(binary.BigEndian.Uint64(sum[:8]) % 100)
}
