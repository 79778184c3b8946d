package engine

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
// vitrine_limit_arenas runs when the program is loaded, before any thread
// exists: glibc fixes a thread's arena when the thread first allocates, so a
// later mallopt would leave the arenas already made. MALLOC_ARENA_MAX in the
// environment, when set, wins.
__attribute__((constructor)) static void vitrine_limit_arenas(void) {
	if (getenv("MALLOC_ARENA_MAX") == NULL)
		mallopt(M_ARENA_MAX, 2);
}
#endif
*/
import "C"

// This file caps glibc's malloc arenas at 2 for the whole process, as
// MALLOC_ARENA_MAX=2 does (imgproxy's images set the same), unless the
// environment sets MALLOC_ARENA_MAX itself. Why: glibc gives each new thread
// an arena of its own, up to 8 per CPU, and every arena keeps freed image
// buffers mapped; on 12 MP sources at 16 concurrent requests that was about
// 12% more peak RSS at no gain in throughput (e2e/README.md, Performance).
