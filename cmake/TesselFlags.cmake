# Compiler flags shared by every tessel target.
#
# tessel_warnings: -Wall -Wextra -Werror for project code (never for third-party code).
# Sanitizers apply globally when TESSEL_SANITIZE (ASan+UBSan) or TESSEL_TSAN (ThreadSanitizer) is
# on; the two cannot be combined. TESSEL_FUZZ (with TESSEL_SANITIZE) adds libFuzzer's coverage
# instrumentation to every target.
# tessel_isa_sources(): per-ISA translation units get their target flags here, keyed by the
# file-name suffix (x86: _f16c, _avx2, _avx512, _avx512vnni, _avx512vbmi, _amx; aarch64: _neon, _dotprod,
# _i8mm, _sve, _sme; hexagon: _hvx), so the portable build never uses -march=native.

add_library(tessel_warnings INTERFACE)
target_compile_options(tessel_warnings INTERFACE -Wall -Wextra -Werror)
if(TESSEL_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12 reports false -Wmaybe-uninitialized on std::variant moves when ASan instruments
  # them (GCC bug 105562 and relatives); the release build keeps the warning.
  target_compile_options(tessel_warnings INTERFACE -Wno-maybe-uninitialized)
endif()

# tessel_glue_flags(target): tools and tests are glue whose run time is spent in the library's
# kernels, so optimised trees compile them at -O1 (about 40 % less compile time than -O3); the
# library keeps its flags.
function(tessel_glue_flags target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O1>)
endfunction()

# No implicit fused multiply-add: the reference kernels must give the same bits on every target
# (g++ contracts a*b+c into FMA by default where the ISA has it, e.g. aarch64).
add_compile_options(-ffp-contract=off)

if(TESSEL_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# libFuzzer targets (tests/fuzz) run library code, so in a TESSEL_FUZZ tree every target carries the
# fuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link: edge counters and comparison
# tracing; the sanitizer runtime linked into every binary defines its callbacks), compute kernels,
# tools, tests and the fuzz harnesses excepted (fuzz_coverage_ignorelist.txt). Only the fuzz
# targets link libFuzzer itself (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt). A fuzz tree is a
# sanitizer tree: a crash found without AddressSanitizer and UBSan would say much less.
if(TESSEL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TESSEL_FUZZ needs clang with libFuzzer (found ${CMAKE_C_COMPILER_ID} / "
                        "${CMAKE_CXX_COMPILER_ID}); configure with CC=clang CXX=clang++")
  endif()
  if(NOT TESSEL_SANITIZE)
    message(FATAL_ERROR "TESSEL_FUZZ needs TESSEL_SANITIZE=ON (the fuzz targets run the library under "
                        "AddressSanitizer + UBSan)")
  endif()
  # clang does not list the ignorelist among a source's dependencies: its hash in the flags makes an
  # edit of it rebuild the tree.
  set(tessel_fuzz_ignorelist ${CMAKE_CURRENT_LIST_DIR}/fuzz_coverage_ignorelist.txt)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${tessel_fuzz_ignorelist})
  file(MD5 ${tessel_fuzz_ignorelist} tessel_fuzz_ignorelist_md5)
  add_compile_options(-fsanitize=fuzzer-no-link -fsanitize-coverage-ignorelist=${tessel_fuzz_ignorelist}
                      -DTESSEL_FUZZ_COVERAGE_IGNORELIST_MD5=${tessel_fuzz_ignorelist_md5})
endif()

# Sanitizer trees check correctness, not speed: RelWithDebInfo there means -O1 with line tables only
# (reports keep file:line), which compiles much faster than -O2 -g (CI builds two such trees).
if((TESSEL_SANITIZE OR TESSEL_TSAN) AND CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(tessel_san_flags "-O1 -gline-tables-only")
  else()
    set(tessel_san_flags "-O1 -g1")
  endif()
  set(CMAKE_C_FLAGS_RELWITHDEBINFO "${tessel_san_flags}" CACHE STRING "" FORCE)
  set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "${tessel_san_flags}" CACHE STRING "" FORCE)
endif()

if(TESSEL_TSAN)
  if(TESSEL_SANITIZE)
    message(FATAL_ERROR "TESSEL_TSAN and TESSEL_SANITIZE are mutually exclusive (ThreadSanitizer cannot run with AddressSanitizer)")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

set(TESSEL_X86 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|i.86")
  set(TESSEL_X86 ON)
endif()
set(TESSEL_ARM64 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64|ARM64")
  set(TESSEL_ARM64 ON)
endif()

# Give each ISA-specific source the target flags its suffix names.
function(tessel_isa_sources)
  foreach(src IN LISTS ARGN)
    get_filename_component(stem "${src}" NAME_WE)
    if(stem MATCHES "_f16c$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mf16c;-mavx")
    elseif(stem MATCHES "_avx2$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    elseif(stem MATCHES "_avx512$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx2;-mfma;-mf16c")
    elseif(stem MATCHES "_avx512vnni$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx2;-mfma;-mf16c")
    elseif(stem MATCHES "_avx512vbmi$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512vbmi;-mavx2;-mfma;-mf16c")
    elseif(stem MATCHES "_neon$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8-a")
    elseif(stem MATCHES "_dotprod$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
    elseif(stem MATCHES "_i8mm$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+i8mm")
    elseif(stem MATCHES "_sve$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+i8mm+sve")
    elseif(stem MATCHES "_sme$")
      # the C++ around the SME cores runs outside streaming mode as baseline code; the .S cores
      # name their architecture themselves (.arch armv9-a+sme)
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8-a")
    elseif(stem MATCHES "_hvx$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mhvx;-mhvx-length=128b")
    elseif(stem MATCHES "_amx$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mamx-tile;-mamx-int8;-mamx-bf16;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx2;-mfma;-mf16c")
    endif()
    # The K-quant kernels' fully unrolled sub-block loops took clang 315 s (avx512vnni) and 85 s
    # (avx2) to compile with UBSan's checks in them (24 s without): there they get AddressSanitizer only.
    if(TESSEL_SANITIZE AND stem MATCHES "^packed_kquant_")
      set_property(SOURCE ${src} APPEND PROPERTY COMPILE_OPTIONS "-fno-sanitize=undefined")
    endif()
  endforeach()
endfunction()
