// <immintrin.h> for the AVX-512 translation units. g++ 12 reports the deliberately undefined
// registers inside its own AVX-512 intrinsics as (maybe-)uninitialized once they are inlined at
// -O3 (a false positive pointing into the header), so the warnings are silenced for the header
// only. Include it before anything else that includes <immintrin.h>.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
#include <immintrin.h>
