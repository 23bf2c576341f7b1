/* The freestanding runtime of tessel's Hexagon programs (src/npu/hexagon): what a C library and
 * compiler-rt would give a program, since Debian ships neither for Hexagon.
 *   start.c   _start -> tsl_main(argc, argv), exit with its status
 *   sys.c     Linux system calls by trap0 (sys.h)
 *   libc.c    memcpy, memmove, memset, memcmp and clang's aligned-copy variant (the compiler
 *             emits calls to them)
 *   arith.c   the compiler's integer division helpers (__hexagon_udivsi3, __hexagon_divdi3, ...)
 *   fmath.c   IEEE float helpers: __hexagon_divdf3, __hexagon_divsf3, sqrtf, fmaf, floorf
 * Each is checked against the host's results (tests/hexagon). */
#ifndef TESSEL_NPU_HEXAGON_RUNTIME_H
#define TESSEL_NPU_HEXAGON_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

/* The program's entry point, defined by each program. */
int tsl_main(int argc, char** argv);

/* Writes s (NUL-terminated) to fd; for the programs' messages. */
void tsl_puts(int32_t fd, const char* s);
/* Appends v in decimal / as 2 * bytes hex digits to out (which must have room); returns the end. */
char* tsl_fmt_i64(char* out, int64_t v);
char* tsl_fmt_hex(char* out, uint64_t v, int bytes);

#endif /* TESSEL_NPU_HEXAGON_RUNTIME_H */
