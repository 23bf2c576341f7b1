/* Linux system calls of the Hexagon device program (freestanding: no libc), made with `trap0(#1)`:
 * the number in r6, arguments in r0..r5, the result (or -errno) in r0. Numbers are the asm-generic
 * table's (include/uapi/asm-generic/unistd.h, 32-bit: mmap2, 32-bit time), which Hexagon Linux and
 * qemu-hexagon use. */
#ifndef TESSEL_NPU_HEXAGON_SYS_H
#define TESSEL_NPU_HEXAGON_SYS_H

#include <stddef.h>
#include <stdint.h>

enum {
    TSL_SYS_CLOSE = 57,
    TSL_SYS_LLSEEK = 62,
    TSL_SYS_WRITE = 64,
    TSL_SYS_EXIT_GROUP = 94,
    TSL_SYS_FUTEX = 98,
    TSL_SYS_NANOSLEEP = 101,
    TSL_SYS_CLOCK_GETTIME = 113,
    TSL_SYS_SENDMSG = 211,
    TSL_SYS_RECVMSG = 212,
    TSL_SYS_MUNMAP = 215,
    TSL_SYS_MMAP2 = 222
};

/* A system call with up to 6 arguments; returns the kernel's result (negative: -errno). */
static inline int32_t tsl_sys(int32_t n, int32_t a, int32_t b, int32_t c, int32_t d, int32_t e, int32_t f) {
    register int32_t r0 __asm__("r0") = a;
    register int32_t r1 __asm__("r1") = b;
    register int32_t r2 __asm__("r2") = c;
    register int32_t r3 __asm__("r3") = d;
    register int32_t r4 __asm__("r4") = e;
    register int32_t r5 __asm__("r5") = f;
    register int32_t r6 __asm__("r6") = n;
    __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6) : "memory");
    return r0;
}

/* 32-bit time (the asm-generic syscalls above take it). */
typedef struct tsl_timespec {
    int32_t tv_sec;
    int32_t tv_nsec;
} tsl_timespec;

/* write(2) of all `n` bytes (retried on short writes); returns 0, or -errno. */
int32_t tsl_write_all(int32_t fd, const void* p, size_t n);
/* Ends the process with `status` (exit_group). */
_Noreturn void tsl_exit(int32_t status);
/* CLOCK_MONOTONIC in ns. */
uint64_t tsl_monotonic_ns(void);
/* Sleeps about `ns` nanoseconds. */
void tsl_sleep_ns(uint64_t ns);
/* Maps `size` bytes of fd at offset 0 shared read/write; NULL on failure. */
void* tsl_map_shared(int32_t fd, uint64_t size);
/* Anonymous private read/write memory of `size` bytes (zero-filled); NULL on failure. */
void* tsl_map_anonymous(uint64_t size);
void tsl_unmap(void* p, uint64_t size);
/* The size of the file behind fd (lseek to its end), or -1. */
int64_t tsl_file_size(int32_t fd);
void tsl_close(int32_t fd);

/* FUTEX_WAIT (the shared form: the word may be in memory another process maps) while *word ==
 * expected, at most timeout_us; FUTEX_WAKE of every waiter. */
void tsl_futex_wait(uint32_t* word, uint32_t expected, uint32_t timeout_us);
void tsl_futex_wake(uint32_t* word);

/* One packet of a SOCK_SEQPACKET socket, at most `bytes`, with the fd it carries (SCM_RIGHTS) in
 * *fd (-1: none). dontwait: return -11 (EAGAIN) at once when none is waiting. Returns the packet's
 * length, 0 when the peer closed the socket, or -errno; a truncated packet or fd list is -90
 * (EMSGSIZE; a carried fd is closed). */
int32_t tsl_recv_packet(int32_t sock, void* buf, uint32_t bytes, int32_t* fd, int dontwait);
/* Sends one packet (no fd, no SIGPIPE); returns 0 or -errno. */
int32_t tsl_send_packet(int32_t sock, const void* buf, uint32_t bytes);

#endif /* TESSEL_NPU_HEXAGON_SYS_H */
