//go:build linux

package filters

import (
	"bufio"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// rssMB is the process's resident set in MB.
func rssMB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestCrashedInstancesReturnMemory runs a memory hog again and again: each
// instance fills its 32 MB and is thrown away, and its memory goes back to
// the system with it, so the process does not grow by the sum.
func TestCrashedInstancesReturnMemory(t *testing.T) {
	dir := t.TempDir()
	kit(t, dir, "hog", KindTransformation, "hog", map[string]any{"limits": map[string]any{"memoryMB": 32, "instances": 1}})
	h := newHost(t, dir, nil)
	tr, _ := h.Current().Transformation("hog")
	before := rssMB(t)
	const runs = 10
	for i := 0; i < runs; i++ {
		if _, err := tr.Transform(context.Background(), testImage(4, 4, 1), nil, nil); !errors.Is(err, ErrFailed) {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if grew := rssMB(t) - before; grew > 3*32 {
		t.Fatalf("RSS grew by %d MB over %d hogs of 32 MB each; crashed instances keep their memory", grew, runs)
	}
}

// TestFreedMemoryStaysMapped shows that a linear memory freed while a guest
// may still run (an instance closed under a running call) stays mapped:
// its pages are released, and touching them does not fault.
func TestFreedMemoryStaysMapped(t *testing.T) {
	mem := allocateMemory.Allocate(0, 1<<20)
	buf := mem.Reallocate(1 << 16)
	buf[0] = 1
	mem.Free()
	if buf[0] != 0 {
		t.Fatalf("freed page still holds %d; its pages were not released", buf[0])
	}
	buf[1] = 2
}

// mapped reports whether addr lies in one of the process's mappings.
func mapped(t *testing.T, addr uintptr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		span, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(span, "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uint64(addr) >= start && uint64(addr) < end {
			return true
		}
	}
	return false
}

// TestMemoryOutlivesModuleClose closes an instance's module, as closing
// the runtime does under a running call (Host.Close past its deadline),
// and collects garbage: the guest's memory must stay mapped as long as the
// instance exists. wazero drops its reference to the memory when it closes
// the module, so a mapping kept only by that reference could be unmapped
// while the guest still ran, and the guest would then write into whatever
// the address was mapped to next.
func TestMemoryOutlivesModuleClose(t *testing.T) {
	dir := t.TempDir()
	kit(t, dir, "invert", KindTransformation, "invert", map[string]any{"limits": map[string]any{"instances": 1}})
	h := newHost(t, dir, nil)
	f := h.Current().filters["invert"]
	inst, err := f.pool.get(context.Background(), context.Background())
	if err != nil {
		t.Fatal(err)
	}
	view, ok := inst.mod.Memory().Read(0, 1)
	if !ok {
		t.Fatal("no memory")
	}
	addr := uintptr(unsafe.Pointer(&view[0]))
	if err := inst.mod.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // cleanups run on a goroutine of their own
		if !mapped(t, addr) {
			t.Fatal("the guest's memory was unmapped while its instance still existed")
		}
	}
	_ = view[0] // still readable: released pages read as zeros
	f.pool.put(inst, false)
}
