package engine

/*
#cgo pkg-config: vips
#cgo LDFLAGS: -ldl
#include <vips/vips.h>
#include <vips/vector.h>
#include "orcguard.h"
*/
import "C"

import "github.com/davidbyttow/govips/v2/vips"

// Before 8.15, libvips runs its vector (SIMD) paths (reducev, which every
// resize and thumbnail takes, integer convolutions such as blur and
// sharpen, morphology) on liborc, which compiles each operation's inner
// loop at run time into a region of code memory. liborc's code memory is
// not thread-safe: it links its code chunks in one list that freeing a
// program merges and compiling one splits, under no lock (it locks only
// the search for a free chunk). libvips compiles under its global lock but
// frees (orc_program_free, when an operation is disposed) under none, and
// with its operation cache off (startVips) every render disposes its
// operations at once. Two renders doing so together corrupt orc's list and
// then glibc's heap: the server died of it beside hostile guests (SIGSEGV in
// liborc during a render's final unref; "malloc(): unaligned fastbin chunk
// detected" on a freed chunk still linked as an orc code chunk), and
// TestOrcGuard's stress, with the guard bypassed, crashed a process in 4
// runs of 4 within 10 s.
//
// So orcguard.c defines orc_program_compile and orc_program_free in the
// executable, which the dynamic linker binds libvips' calls to, and runs
// liborc's under one lock. Where that binding did not happen (a static
// libvips, a linker that did not export them), guardOrc turns the vector
// paths off instead, which costs up to 3.2x on blurs and 4-43% on resizes
// and thumbnails (e2e/README.md, Performance). From libvips 8.15 on, the vector
// paths run on highway, with no code memory to guard, and nothing is done;
// so too when they are off (VIPS_NOVECTOR).

// orcState says how liborc was made safe: "none needed" (no orc in use),
// "serialised" (orcguard.c's lock) or "vector paths off".
type orcState string

const (
	orcUnused     orcState = "none needed"
	orcSerialised orcState = "serialised"
	orcOff        orcState = "vector paths off"
)

// guardOrc makes libvips' use of liborc safe, once, after libvips starts.
func guardOrc() orcState {
	switch {
	case vips.MajorVersion != 8 || vips.MinorVersion >= 15 || C.vips_vector_isenabled() == 0:
		return orcUnused
	case C.vt_orc_guarded() != 0:
		return orcSerialised
	default:
		C.vips_vector_set_enabled(0)
		return orcOff
	}
}

// orcGuardedCalls counts the compiles and frees orcguard.c passed on.
func orcGuardedCalls() uint64 { return uint64(C.vt_orc_guarded_calls()) }
