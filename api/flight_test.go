package api

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

func TestFlightSharesWork(t *testing.T) {
	var f flight
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	fn := func(ctx context.Context) (variant, error) {
		runs.Add(1)
		close(started)
		<-release
		return variant{Mime: "image/png"}, nil
	}
	const n = 8
	var wg sync.WaitGroup
	results := make(chan variant, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		v, _, err := f.do(context.Background(), "k", fn)
		if err != nil {
			t.Error(err)
		}
		results <- v
	}()
	<-started
	for range n - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, shared, err := f.do(context.Background(), "k", fn)
			if err != nil || !shared {
				t.Errorf("follower: shared %v, err %v", shared, err)
			}
			results <- v
		}()
	}
	// Wait until every follower has joined before releasing the work.
	for {
		f.mu.Lock()
		w := f.calls["k"].waiters
		f.mu.Unlock()
		if w == n {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	close(results)
	for v := range results {
		if v.Mime != "image/png" {
			t.Fatalf("result %+v", v)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("work ran %d times, want once", runs.Load())
	}
}

// TestFlightWaiterLeaves: a caller whose context ends stops waiting at once
// while the work goes on for the others; when the last caller leaves, the
// work's context is cancelled.
func TestFlightWaiterLeaves(t *testing.T) {
	var f flight
	workCtx := make(chan context.Context, 1)
	fn := func(ctx context.Context) (variant, error) {
		workCtx <- ctx
		<-ctx.Done()
		return variant{}, ctx.Err()
	}
	first, cancelFirst := context.WithCancel(context.Background())
	second, cancelSecond := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, _, err := f.do(first, "k", fn); errs <- err }()
	wctx := <-workCtx
	for {
		f.mu.Lock()
		_, ok := f.calls["k"]
		f.mu.Unlock()
		if ok {
			break
		}
		runtime.Gosched()
	}
	go func() { _, _, err := f.do(second, "k", fn); errs <- err }()
	for {
		f.mu.Lock()
		w := f.calls["k"].waiters
		f.mu.Unlock()
		if w == 2 {
			break
		}
		runtime.Gosched()
	}
	cancelFirst()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v, want context.Canceled", err)
	}
	if wctx.Err() != nil {
		t.Fatal("work cancelled while a caller still waits")
	}
	cancelSecond()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("second caller: %v", err)
	}
	<-wctx.Done() // the last caller left: the work stops
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) != 0 {
		t.Fatalf("calls left over: %v", f.calls)
	}
}

func TestVariantHashVersion(t *testing.T) {
	// Two metadata changes in one second leave Updated equal but move the
	// version: the variants must differ.
	a := storage.Image{User: "u", Identifier: "i", Version: 7, Updated: time.Unix(100, 0)}
	b := a
	b.Version++
	chain := engine.Chain{}
	if variantHash(a, chain, "png") == variantHash(b, chain, "png") {
		t.Fatal("variant hash ignores the image version")
	}
	if variantHash(a, chain, "png") == variantHash(a, chain, "jpg") {
		t.Fatal("variant hash ignores the format")
	}
}
