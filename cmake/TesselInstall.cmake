# `cmake --install <build> [--prefix P]`: the libraries (static libtessel.a, shared libtessel.so with
# its SONAME links), the public headers (tessel.h, tessel/*.hpp), a relocatable pkg-config file
# (lib/pkgconfig/tessel.pc) and the `tessel` CLI. tests/install/ builds an outside project against
# the installed tree.
install(TARGETS tessel tessel_shared tessel_cli
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The prefix as seen from the pkg-config folder (lib/pkgconfig -> ../..), so the file stays right
# when the tree is installed under another prefix or moved.
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH TESSEL_PC_PREFIX_FROM_PCDIR /prefix/${pc_dir} /prefix)
string(REGEX REPLACE "/$" "" TESSEL_PC_PREFIX_FROM_PCDIR "${TESSEL_PC_PREFIX_FROM_PCDIR}")
# A static link needs what the library's layers link: PCRE2, and OpenMPI's C library when built with it.
set(TESSEL_PC_REQUIRES_PRIVATE "libpcre2-8")
if(TESSEL_MPI)
  string(APPEND TESSEL_PC_REQUIRES_PRIVATE " ompi-c")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/tessel.pc.in ${PROJECT_BINARY_DIR}/tessel.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tessel.pc DESTINATION ${pc_dir})
