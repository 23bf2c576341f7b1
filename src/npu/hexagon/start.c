/* Process start-up of the Hexagon programs (no C runtime): Linux enters _start with the stack
 * pointer (r29) at argc, then argv[0..argc), NULL, envp... (the ELF start-up convention). _start
 * hands that pointer to tsl_start, which calls the program's tsl_main and exits with its status. */
#include "npu/hexagon/runtime.h"
#include "npu/hexagon/sys.h"

_Noreturn void tsl_start(const int32_t* sp);

_Noreturn void tsl_start(const int32_t* sp) {
    const int argc = sp[0];
    char** argv = (char**)(uintptr_t)(sp + 1);
    tsl_exit(tsl_main(argc, argv));
}

__asm__(".text\n"
        ".globl _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "  r0 = r29\n"
        "  r29 = and(r29, #-8)\n" /* the ABI's 8-byte stack alignment */
        "  jump tsl_start\n");
