#ifndef VITRINE_ORCGUARD_H
#define VITRINE_ORCGUARD_H

#include <stdint.h>

// vt_orc_guarded reports whether liborc is loaded and libvips' calls to
// orc_program_compile and orc_program_free reach orcguard.c's.
int vt_orc_guarded(void);

// vt_orc_guarded_calls counts the calls orcguard.c has passed on.
uint64_t vt_orc_guarded_calls(void);

#endif
