package engine

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

func TestProcessSource(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{})
	src := source(t, 640, 360, "jpg", false)
	info := Info{Mime: "image/jpeg", Ext: "jpg", Width: 640, Height: 360}
	chain, err := e.ParseChain([]string{"thumbnail:width=100,height=100"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Process(context.Background(), src, Request{Chain: chain, Format: "jpg", Source: info})
	if err != nil {
		t.Fatal(err)
	}
	errLoad := errors.New("blob gone")
	tests := []struct {
		name    string
		req     Request
		load    func(context.Context) ([]byte, error)
		wantErr error
		same    bool // the result is the stored bytes themselves
	}{
		{name: "rendered", req: Request{Chain: chain, Format: "jpg", Source: info}},
		{name: "source info unknown", req: Request{Chain: chain, Format: "jpg"}},
		{name: "nothing to render", req: Request{Format: "jpg", Source: info}, same: true},
		{name: "load fails", req: Request{Chain: chain, Format: "jpg", Source: info},
			load: func(context.Context) ([]byte, error) { return nil, errLoad }, wantErr: errLoad},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			load := func(ctx context.Context) ([]byte, error) {
				calls++
				if tc.load != nil {
					return tc.load(ctx)
				}
				return src, nil
			}
			res, err := e.ProcessSource(context.Background(), load, tc.req)
			if calls != 1 {
				t.Errorf("load called %d times, want 1", calls)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.same && &res.Data[0] != &src[0]:
				t.Error("the stored bytes were not returned as they are")
			case !tc.same && !bytes.Equal(res.Data, want.Data):
				t.Errorf("%d bytes, Process gave %d", len(res.Data), len(want.Data))
			}
		})
	}
}

// TestProcessSourceLoadsInSlot checks that a request waiting for a pipeline
// slot has not read its source: with the only slot taken and the request
// given up, load never ran.
func TestProcessSourceLoadsInSlot(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Config{Concurrency: 1})
	chain, err := e.ParseChain([]string{"resize:width=10"})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Chain: chain, Format: "jpg", Source: Info{Mime: "image/jpeg", Ext: "jpg", Width: 64, Height: 48}}
	if err := e.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	loaded := false
	done := make(chan error)
	go func() {
		_, err := e.ProcessSource(ctx, func(context.Context) ([]byte, error) {
			loaded = true
			return source(t, 64, 48, "jpg", false), nil
		}, req)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if loaded {
		t.Error("the source was read while no slot was free")
	}
	e.release()
}
