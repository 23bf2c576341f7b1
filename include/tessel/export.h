/* TESSEL_API marks what libtessel exports. The library is built with -fvisibility=hidden, so
 * only declarations carrying TESSEL_API (the C API in tessel.h, the C++ API in the tessel/ headers) are
 * visible to programs linking the shared library. Plain C, included by C and C++ headers. */
#ifndef TESSEL_EXPORT_H
#define TESSEL_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TESSEL_API __attribute__((visibility("default")))
#else
#define TESSEL_API
#endif

#endif /* TESSEL_EXPORT_H */
