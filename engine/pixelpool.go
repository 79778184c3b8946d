package engine

// #include <stdint.h>
import "C"

import (
	"runtime/cgo"
	"sync"
	"syscall"
	"time"
)

// Pixel buffers for guest transformations and the blur kernels (blur_*.c,
// kernelInPlace): a kernel reads its source from one and writes its result
// into another, which libvips then reads in place. A guest step moves its image
// through two buffers of 4 bytes a pixel: libvips renders into one before
// the guest copies it in, and the guest's output is copied into another
// that libvips reads in place. At 12 MP each is 48 MB; fresh from the
// allocator every time (glibc serves anything over 32 MB with its own mmap)
// the kernel faulted in and zeroed both on every call, which cost far more
// than the copies. So they come from this pool: mappings of our own, out of
// the Go heap (libvips keeps a pointer to the output buffer until it closes
// the image) and reused. Idle buffers are bounded in bytes
// (Config.PixelPool.MaxIdleMB) and unmapped after Config.PixelPool.IdleTimeout
// unused.

const (
	// defaultPixelPoolMaxIdle bounds the bytes of idle buffers kept.
	defaultPixelPoolMaxIdle = 192 << 20
	// defaultPixelPoolIdle is how long an idle buffer is kept.
	defaultPixelPoolIdle = 30 * time.Second
	// pixelPoolPage rounds buffer sizes, so that images of nearly the
	// same size share buffers.
	pixelPoolPage = 1 << 20
)

type pixelBuffer struct {
	mem  []byte // the whole mapping
	used time.Time
}

type pixelPool struct {
	mu        sync.Mutex
	idle      []*pixelBuffer // least recently returned first
	idleBytes int
	timer     *time.Timer
	maxIdle   int           // bytes; defaultPixelPoolMaxIdle when 0
	idleFor   time.Duration // defaultPixelPoolIdle when 0
}

// pixels is the process's pool: the buffers are the process's memory,
// whichever engine uses them. New sets its bounds.
var pixels pixelPool

// configure sets the pool's bounds (0: the defaults).
func (p *pixelPool) configure(maxIdle int, idleFor time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maxIdle, p.idleFor = maxIdle, idleFor
}

// bounds returns the pool's bounds with defaults applied; p.mu is held.
func (p *pixelPool) bounds() (int, time.Duration) {
	maxIdle, idleFor := p.maxIdle, p.idleFor
	if maxIdle == 0 {
		maxIdle = defaultPixelPoolMaxIdle
	}
	if idleFor == 0 {
		idleFor = defaultPixelPoolIdle
	}
	return maxIdle, idleFor
}

// get returns a buffer of n bytes (not zeroed) and the function that gives
// it back.
func (p *pixelPool) get(n int) ([]byte, func(), error) {
	if exactBuffers {
		return exactBuffer(n)
	}
	p.mu.Lock()
	best := -1
	for i, b := range p.idle {
		// The smallest idle buffer that fits and wastes less than half.
		if c := len(b.mem); c >= n && c <= 2*n+pixelPoolPage && (best < 0 || c < len(p.idle[best].mem)) {
			best = i
		}
	}
	var b *pixelBuffer
	if best >= 0 {
		b = p.idle[best]
		p.idle = append(p.idle[:best], p.idle[best+1:]...)
		p.idleBytes -= len(b.mem)
	}
	p.mu.Unlock()
	if b == nil {
		size := (n + pixelPoolPage - 1) / pixelPoolPage * pixelPoolPage
		mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			return nil, nil, err
		}
		b = &pixelBuffer{mem: mem}
	}
	var once sync.Once
	return b.mem[:n], func() { once.Do(func() { p.put(b) }) }, nil
}

// put keeps b for reuse, dropping the least recently used buffers beyond
// the idle bound.
func (p *pixelPool) put(b *pixelBuffer) {
	b.used = time.Now()
	p.mu.Lock()
	maxIdle, idleFor := p.bounds()
	p.idle = append(p.idle, b)
	p.idleBytes += len(b.mem)
	var drop []*pixelBuffer
	for p.idleBytes > maxIdle {
		drop = append(drop, p.idle[0])
		p.idleBytes -= len(p.idle[0].mem)
		p.idle = p.idle[1:]
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(idleFor, p.expire)
	}
	p.mu.Unlock()
	unmap(drop)
}

// expire unmaps the buffers idle for longer than the idle time.
func (p *pixelPool) expire() {
	p.mu.Lock()
	_, idleFor := p.bounds()
	cutoff := time.Now().Add(-idleFor)
	n := 0
	for n < len(p.idle) && p.idle[n].used.Before(cutoff) {
		p.idleBytes -= len(p.idle[n].mem)
		n++
	}
	drop := append([]*pixelBuffer(nil), p.idle[:n]...)
	p.idle = p.idle[n:]
	if len(p.idle) > 0 {
		p.timer = time.AfterFunc(time.Until(p.idle[0].used.Add(idleFor)), p.expire)
	} else {
		p.timer = nil
	}
	p.mu.Unlock()
	unmap(drop)
}

func unmap(bs []*pixelBuffer) {
	for _, b := range bs {
		_ = syscall.Munmap(b.mem)
	}
}

//export vitrinePixelBufferClosed
func vitrinePixelBufferClosed(h C.uintptr_t) {
	handle := cgo.Handle(h)
	release := handle.Value().(func())
	handle.Delete()
	release()
}
