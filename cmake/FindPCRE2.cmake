# Find PCRE2's 8-bit library (Debian: libpcre2-dev; for the aarch64 cross build libpcre2-dev:arm64,
# found through the roots set by cmake/toolchains/aarch64-linux-gnu.cmake). PCRE2 ships no CMake
# package config on Debian, hence this module.
#
# Defines PCRE2_FOUND, PCRE2_INCLUDE_DIR, PCRE2_8_LIBRARY and the imported target PCRE2::pcre2-8.

find_path(PCRE2_INCLUDE_DIR pcre2.h)
find_library(PCRE2_8_LIBRARY NAMES pcre2-8)

# Version from pcre2.h (PCRE2_MAJOR / PCRE2_MINOR), for find_package(PCRE2 <version>).
if(PCRE2_INCLUDE_DIR AND EXISTS "${PCRE2_INCLUDE_DIR}/pcre2.h")
  file(STRINGS "${PCRE2_INCLUDE_DIR}/pcre2.h" _pcre2_ver REGEX "^#define PCRE2_(MAJOR|MINOR)[ \t]+[0-9]+")
  string(REGEX REPLACE ".*PCRE2_MAJOR[ \t]+([0-9]+).*" "\\1" _pcre2_major "${_pcre2_ver}")
  string(REGEX REPLACE ".*PCRE2_MINOR[ \t]+([0-9]+).*" "\\1" _pcre2_minor "${_pcre2_ver}")
  set(PCRE2_VERSION "${_pcre2_major}.${_pcre2_minor}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(PCRE2 REQUIRED_VARS PCRE2_8_LIBRARY PCRE2_INCLUDE_DIR VERSION_VAR PCRE2_VERSION)

if(PCRE2_FOUND AND NOT TARGET PCRE2::pcre2-8)
  add_library(PCRE2::pcre2-8 UNKNOWN IMPORTED)
  set_target_properties(PCRE2::pcre2-8 PROPERTIES
    IMPORTED_LOCATION "${PCRE2_8_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PCRE2_INCLUDE_DIR}")
endif()
mark_as_advanced(PCRE2_INCLUDE_DIR PCRE2_8_LIBRARY)
