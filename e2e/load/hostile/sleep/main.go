//go:build wasip1

// Command sleep is a hostile guest of e2e/load/hostile.sh: a transformation
// that sleeps for ms milliseconds (20 s by default) in one WASI poll_oneoff
// on a relative monotonic-clock subscription, far past its manifest's
// timeoutMs of 1000. It asks for the clock capability: without it the
// sandbox's sleep returns at once. The sleep is the raw WASI call, not
// time.Sleep, so that the host sees exactly one blocking call whatever the
// Go runtime's scheduler would do.
package main

import (
	"errors"
	"image"
	"unsafe"

	vitrine "github.com/vitrine/vitrine/wasm-sdk"
)

func init() {
	vitrine.Transformation(transform)
}

// main is not called: the module is a reactor, and init registers the work.
func main() {}

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out unsafe.Pointer, nsubscriptions uint32, nevents unsafe.Pointer) uint32

// subscription is WASI's subscription_t for a clock event (48 bytes).
type subscription struct {
	userdata  uint64
	tag       uint8 // 0: clock
	_         [7]byte
	clockID   uint32 // 1: monotonic
	_         uint32
	timeout   uint64 // nanoseconds
	precision uint64
	flags     uint16 // 0: relative
	_         [6]byte
}

// event is WASI's event_t (32 bytes).
type event struct {
	userdata uint64
	errno    uint16
	typ      uint8
	_        [21]byte
}

func transform(img *image.NRGBA, p vitrine.Params) (*image.NRGBA, error) {
	ms, err := p.Int("ms")
	if err != nil {
		return nil, err
	}
	sub := subscription{tag: 0, clockID: 1, timeout: uint64(ms) * 1e6}
	var ev event
	var n uint32
	if errno := pollOneoff(unsafe.Pointer(&sub), unsafe.Pointer(&ev), 1, unsafe.Pointer(&n)); errno != 0 || n != 1 || ev.errno != 0 {
		return nil, errors.New("sleep: poll_oneoff failed")
	}
	return img, nil
}
