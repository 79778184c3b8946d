package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCloseWaitsForRenders: Close returns only once no render runs, a
// render that gave its slot up for a guest step included; work asked of a
// closed engine fails with ErrClosed.
func TestCloseWaitsForRenders(t *testing.T) {
	e := newTestEngine(t, Config{Concurrency: 2})
	render, _, err := e.takeSlot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	guest, _, err := e.takeSlot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	guest.release() // in a guest step: no slot held, still a render

	t.Run("a render holds its slot", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := e.Close(ctx); err == nil {
			t.Fatal("Close returned nil while a render held a slot")
		}
	})
	render.end()

	closed := make(chan error, 1)
	go func() { closed <- e.Close(context.Background()) }()
	t.Run("a render in a guest step", func(t *testing.T) {
		<-e.closed // Close holds every slot (none was kept by the failed Close)
		if err := guest.retake(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("retake after Close = %v, want ErrClosed", err)
		}
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) before the render in a guest step ended", err)
		default:
		}
		guest.end()
		if err := <-closed; err != nil {
			t.Fatalf("Close = %v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		_, err := e.Process(context.Background(), encodePicture(t, testPicture(8, 8, false), "png"), Request{Format: "jpg"})
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Process after Close = %v, want ErrClosed", err)
		}
		if err := e.Close(context.Background()); err != nil {
			t.Fatalf("second Close = %v", err)
		}
	})
}
