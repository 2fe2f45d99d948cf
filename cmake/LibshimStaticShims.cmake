# LIBSHIM_STATIC_SHIMS: link the shim executables fully static and non-PIE.
#
# One shim runs per container, so what each one maps privately is what a container costs:
# the relocated data (GOT, .data.rel.ro) of every shared library (libstdc++, protobuf-lite,
# boost_json, fmt, libc, libm, libgcc_s, ld.so) plus the binary's own. A static non-PIE
# executable has one small data segment, no dynamic loader and no relocation at start-up,
# and its text is shared between all the shims (docs/performance.md: 0.59 -> ~0.34 MiB
# per container with 20 running).
#
# Included before the find_package() calls: it makes them pick the static archives of
# protobuf-lite and boost_json. Debian has no libfmt.a, so fmt's compiled part is built
# from its headers (cmake/fmt_static.cpp). Tests and benchmarks link the same archives
# (all built as PIC) but stay dynamic PIE executables. Sanitizer builds keep every
# executable dynamic: ASan/UBSan runtimes need it.
option(LIBSHIM_STATIC_SHIMS "Link the shim executables static and non-PIE (ignored with LIBSHIM_SANITIZE)" ON)

if(LIBSHIM_STATIC_SHIMS AND NOT LIBSHIM_SANITIZE)
  set(LIBSHIM_STATIC_LINK ON)
else()
  set(LIBSHIM_STATIC_LINK OFF)
endif()
message(STATUS "libshim: static shim executables: ${LIBSHIM_STATIC_LINK}")

set(Boost_USE_STATIC_LIBS ${LIBSHIM_STATIC_LINK})
set(Protobuf_USE_STATIC_LIBS ${LIBSHIM_STATIC_LINK})
# FindProtobuf caches the library it found: a build dir configured with the other
# setting would keep linking it (a shared object cannot go into a static executable).
foreach(var Protobuf_LITE_LIBRARY_RELEASE Protobuf_LITE_LIBRARY_DEBUG)
  if(DEFINED CACHE{${var}})
    if(LIBSHIM_STATIC_LINK AND NOT "${${var}}" MATCHES "\\.a$")
      unset(${var} CACHE)
    elseif(NOT LIBSHIM_STATIC_LINK AND "${${var}}" MATCHES "\\.a$")
      unset(${var} CACHE)
    endif()
  endif()
endforeach()

# The fmt library target that libshim links: our static build of fmt's compiled part, or
# Debian's shared libfmt. Call after find_package(fmt). The static part is built either
# way: it is installed (libshim_fmt.a, libshim::fmt_static) so that a vendor can link a
# fully static shim from the installed package alone (cmake/libshimConfig.cmake.in).
function(libshim_fmt_library out_var)
  if(NOT TARGET libshim_fmt)
    add_library(libshim_fmt STATIC ${PROJECT_SOURCE_DIR}/cmake/fmt_static.cpp)
    target_include_directories(libshim_fmt SYSTEM PUBLIC
      $<BUILD_INTERFACE:$<TARGET_PROPERTY:fmt::fmt,INTERFACE_INCLUDE_DIRECTORIES>>)
    set_target_properties(libshim_fmt PROPERTIES POSITION_INDEPENDENT_CODE ON OUTPUT_NAME shim_fmt
                                                 EXPORT_NAME fmt_static)
  endif()
  if(LIBSHIM_STATIC_LINK)
    set(${out_var} libshim_fmt PARENT_SCOPE)
  else()
    set(${out_var} fmt::fmt PARENT_SCOPE)
  endif()
endfunction()

# Makes `target` (a shim executable) static and non-PIE when LIBSHIM_STATIC_LINK is on.
# --gc-sections drops the archives' unused sections; --fatal-warnings turns glibc's
# static-link warnings (getpwnam and other NSS functions, dlopen) into errors, as they
# mean something in the shim needs shared libraries at run time.
function(libshim_static_executable target)
  if(NOT LIBSHIM_STATIC_LINK)
    return()
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  # clang links -static non-PIE by itself and warns that -no-pie is unused.
  target_link_options(${target} PRIVATE -static $<$<CXX_COMPILER_ID:GNU>:-no-pie>
                                        -Wl,--gc-sections -Wl,--fatal-warnings)
endfunction()
