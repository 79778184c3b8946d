//go:build linux

package filters

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
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
