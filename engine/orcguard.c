// liborc's code memory, made safe to use from several threads at once
// (orcguard.go says why). The executable defines orc_program_compile and
// orc_program_free, so the dynamic linker binds libvips' calls to them here
// (ld exports a definition that a shared library of the link refers to);
// each takes one lock and calls liborc's own, found with RTLD_NEXT.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "orcguard.h"

typedef struct _OrcProgram OrcProgram;

static pthread_mutex_t vt_orc_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_once_t vt_orc_once = PTHREAD_ONCE_INIT;
static int (*vt_orc_compile)(OrcProgram *);
static void (*vt_orc_free)(OrcProgram *);
static uint64_t vt_orc_calls;

static void vt_orc_resolve(void) {
	vt_orc_compile = (int (*)(OrcProgram *))dlsym(RTLD_NEXT, "orc_program_compile");
	vt_orc_free = (void (*)(OrcProgram *))dlsym(RTLD_NEXT, "orc_program_free");
}

// ORC_COMPILE_RESULT_UNKNOWN_COMPILE: orc's "could not compile", which
// libvips answers by taking its plain C path.
#define VT_ORC_UNKNOWN_COMPILE 0x100

int orc_program_compile(OrcProgram *program) {
	pthread_once(&vt_orc_once, vt_orc_resolve);
	if (vt_orc_compile == NULL)
		return VT_ORC_UNKNOWN_COMPILE;
	pthread_mutex_lock(&vt_orc_lock);
	vt_orc_calls++;
	int result = vt_orc_compile(program);
	pthread_mutex_unlock(&vt_orc_lock);
	return result;
}

void orc_program_free(OrcProgram *program) {
	pthread_once(&vt_orc_once, vt_orc_resolve);
	if (vt_orc_free == NULL)
		return;
	pthread_mutex_lock(&vt_orc_lock);
	vt_orc_calls++;
	vt_orc_free(program);
	pthread_mutex_unlock(&vt_orc_lock);
}

int vt_orc_guarded(void) {
	pthread_once(&vt_orc_once, vt_orc_resolve);
	return vt_orc_compile != NULL && vt_orc_free != NULL &&
		dlsym(RTLD_DEFAULT, "orc_program_compile") == (void *)orc_program_compile &&
		dlsym(RTLD_DEFAULT, "orc_program_free") == (void *)orc_program_free;
}

uint64_t vt_orc_guarded_calls(void) {
	pthread_mutex_lock(&vt_orc_lock);
	uint64_t n = vt_orc_calls;
	pthread_mutex_unlock(&vt_orc_lock);
	return n;
}
