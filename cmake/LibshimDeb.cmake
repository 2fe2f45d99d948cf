# Debian packages through CPack, one per install component (cmake/LibshimInstall.cmake):
#   libshim<N>            the shared library libshim.so.<N> (section libs), N = SOVERSION
#   libshim-dev           headers, libshim.a, libshim.so, the CMake package, libshim.pc
#   libshim-runc-shim     /usr/libexec/libshim/containerd-shim-runc-v2: off containerd's
#                         PATH, so Debian's containerd package (which owns
#                         /usr/bin/containerd-shim-runc-v2) is untouched; containerd is
#                         pointed at it by path (docs/containerd-config.md)
#   libshim-example-shim  /usr/libexec/libshim/containerd-shim-example-v1
#   libshim-wasm-shim     /usr/libexec/libshim/containerd-shim-wasm-v1 (LIBSHIM_WASM), built
#                         with -DLIBSHIM_WASMEDGE_ROOT=/: it runs the system's WasmEdge
#                         (Debian's wasmedge package, trixie and later)
# Build them from a tree configured with -DCMAKE_INSTALL_PREFIX=/usr (so GNUInstallDirs
# picks the multiarch libdir) and Debian's flags, as tests/packaging/run.sh does:
#   cpack --config <build>/CPackConfig.cmake -B <dir>
# Each package gets /usr/share/doc/<package>/{copyright,changelog.gz}; the changelog is
# CHANGELOG.md in Debian's format (the package is native: we are upstream).
set(LIBSHIM_DEB_MAINTAINER "libshim maintainers <maintainers@users.noreply.a-seed-9eba2b2e.example>"
    CACHE STRING "Maintainer field of the Debian packages")

set(libshim_deb_packages runtime:libshim${LIBSHIM_SOVERSION} dev:libshim-dev runc_shim:libshim-runc-shim
                         example_shim:libshim-example-shim)
if(TARGET containerd-shim-wasm-v1)
  list(APPEND libshim_deb_packages wasm_shim:libshim-wasm-shim)
endif()

# --- CHANGELOG.md -> Debian changelog ----------------------------------------------------
# "## <version> - <YYYY-MM-DD>" starts an entry; "- " bullets become "  * ", their
# continuation lines (two spaces) "    ".
file(STRINGS ${PROJECT_SOURCE_DIR}/CHANGELOG.md libshim_changelog_lines)
set(libshim_deb_changelog "")
set(libshim_deb_in_release FALSE)
set(libshim_deb_has_current FALSE)
macro(libshim_deb_close_release)
  if(libshim_deb_in_release)
    string(APPEND libshim_deb_changelog "\n -- ${LIBSHIM_DEB_MAINTAINER}  ${libshim_deb_date}\n\n")
  endif()
endmacro()
foreach(line IN LISTS libshim_changelog_lines)
  if(line MATCHES "^## ([0-9]+\\.[0-9]+\\.[0-9]+) - ([0-9]+-[0-9]+-[0-9]+)$")
    libshim_deb_close_release()
    set(version ${CMAKE_MATCH_1})
    execute_process(COMMAND date -u -R -d "${CMAKE_MATCH_2} 00:00:00 UTC"
                    OUTPUT_VARIABLE libshim_deb_date OUTPUT_STRIP_TRAILING_WHITESPACE
                    COMMAND_ERROR_IS_FATAL ANY)
    string(APPEND libshim_deb_changelog "libshim (${version}) unstable; urgency=medium\n\n")
    set(libshim_deb_in_release TRUE)
    if(version STREQUAL PROJECT_VERSION)
      set(libshim_deb_has_current TRUE)
    endif()
  elseif(libshim_deb_in_release AND line MATCHES "^- (.*)$")
    string(APPEND libshim_deb_changelog "  * ${CMAKE_MATCH_1}\n")
  elseif(libshim_deb_in_release AND line MATCHES "^  (.*)$")
    string(APPEND libshim_deb_changelog "    ${CMAKE_MATCH_1}\n")
  endif()
endforeach()
libshim_deb_close_release()
if(NOT libshim_deb_has_current)
  message(WARNING "CHANGELOG.md has no entry \"## ${PROJECT_VERSION} - <date>\"")
endif()
set(libshim_deb_doc ${PROJECT_BINARY_DIR}/deb)
file(MAKE_DIRECTORY ${libshim_deb_doc})
file(WRITE ${libshim_deb_doc}/changelog "${libshim_deb_changelog}")
# gzip -n: no name or time stamp in the header, so the same input gives the same bytes.
execute_process(COMMAND gzip -9nf ${libshim_deb_doc}/changelog COMMAND_ERROR_IS_FATAL ANY)

foreach(entry ${libshim_deb_packages})
  string(REPLACE ":" ";" entry ${entry})
  list(GET entry 0 component)
  list(GET entry 1 package)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright ${libshim_deb_doc}/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  set(overrides ${PROJECT_SOURCE_DIR}/packaging/debian/${package}.lintian-overrides)
  if(EXISTS ${overrides})
    install(FILES ${overrides} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
            RENAME ${package} COMPONENT ${component})
  endif()
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_NAME ${package})
endforeach()

# --- CPack -------------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME libshim)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${LIBSHIM_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${LIBSHIM_DEB_MAINTAINER}")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev runc_shim example_shim)
if(TARGET containerd-shim-wasm-v1)
  list(APPEND CPACK_COMPONENTS_ALL wasm_shim)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  # Not an error: only the packages need it, and cpack is a separate step.
  message(STATUS "libshim: Debian packages want -DCMAKE_INSTALL_PREFIX=/usr (multiarch libdir)")
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# shlibs (libshim 1 libshim1 (>= 0.3.0)) for the packages that link libshim.so.1, and an
# ldconfig trigger. CPack writes postinst/postrm scripts calling ldconfig instead; the
# post-build step (cmake/LibshimDebFixup.cmake) takes them out of libshim<N> again.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
file(WRITE ${libshim_deb_doc}/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${libshim_deb_doc}/triggers)
set(CPACK_POST_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/LibshimDebFixup.cmake)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "C++20 library for containerd runtime shims
libshim is the runtime-agnostic half of a containerd shim (shim v2 protocol):
the start, delete and -info actions, a ttrpc server and client, a signalfd
subreaper, the event forwarder to containerd with containerd's event order,
stdio (FIFOs, files, binary loggers, terminals) and the whole task API over a
vendor's runtime (the process tier).
.
This package contains the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The protobuf minor version the installed generated headers were made with (they refuse
# another), and the Boost whose types are in libshim's ABI (cmake/LibshimInstall.cmake).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libshim${LIBSHIM_SOVERSION} (= ${PROJECT_VERSION}), \
libprotobuf-dev (>= ${LIBSHIM_PROTOBUF_MINOR}), libprotobuf-dev (<< ${LIBSHIM_PROTOBUF_NEXT_MINOR}~), \
libboost${LIBSHIM_BOOST_MINOR}-dev, libboost-json${LIBSHIM_BOOST_MINOR}-dev, libfmt-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION "C++20 library for containerd runtime shims (development files)
libshim is the runtime-agnostic half of a containerd shim (shim v2 protocol);
a vendor implements a Runtime and a RuntimeManager and gets the task API,
events, stdio, exits and the start and delete actions.
.
This package contains the headers, the static library, the CMake package
(find_package(libshim CONFIG)) and the pkg-config file (libshim.pc).")

set(CPACK_DEBIAN_RUNC_SHIM_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_RUNC_SHIM_PACKAGE_RECOMMENDS "containerd, runc | crun")
set(CPACK_COMPONENT_RUNC_SHIM_DESCRIPTION "containerd runc shim built on libshim
A drop-in for containerd's Go containerd-shim-runc-v2 (runtime type
io.containerd.runc.v2), driving runc or any runc-compatible CLI.
.
It is installed as /usr/libexec/libshim/containerd-shim-runc-v2, beside
Debian's containerd and not on its PATH: select it in containerd's config
with runtime_path: /usr/share/doc/libshim-runc-shim/containerd-config.md.")

set(CPACK_DEBIAN_EXAMPLE_SHIM_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_EXAMPLE_SHIM_PACKAGE_RECOMMENDS containerd)
set(CPACK_COMPONENT_EXAMPLE_SHIM_DESCRIPTION "example containerd shim built on libshim
The shim of libshim's tutorial (runtime io.containerd.example.v1): it runs a
container's OCI process itself, chrooted in new pid and mount namespaces.
A demonstration of libshim, not a sandbox.
.
Installed as /usr/libexec/libshim/containerd-shim-example-v1.")

set(CPACK_DEBIAN_WASM_SHIM_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_WASM_SHIM_PACKAGE_RECOMMENDS "containerd, runc, wasmedge")
set(CPACK_COMPONENT_WASM_SHIM_DESCRIPTION "containerd shim for WebAssembly modules, built on libshim
The runtime io.containerd.wasm.v1: a container whose entrypoint is a WASI
module runs it in WasmEdge, forked into the container's namespaces and cgroup
from a zygote that loaded the engine once (or inside the container runc makes
when the zygote does not apply the spec); any other entrypoint (a pod's pause
container) runs through runc.
.
Installed as /usr/libexec/libshim/containerd-shim-wasm-v1, with its zygote
libshim-wasm-zygote beside it; it runs the
WasmEdge installed under / (Debian's wasmedge package) unless
LIBSHIM_WASMEDGE_ROOT names another root. See
/usr/share/doc/libshim-wasm-shim/wasm.md.")
if(TARGET containerd-shim-wasm-v1 AND NOT LIBSHIM_WASMEDGE_ROOT STREQUAL "/")
  message(STATUS "libshim: a Debian package of the Wasm shim wants -DLIBSHIM_WASMEDGE_ROOT=/")
endif()

include(CPack)
