# cmake --install: what a vendor gets (README "How a vendor adds libshim"):
#   include/shim/...                 the public headers, the generated shim/pb/*.pb.h they
#                                    include and the .proto files those came from
#   lib/libshim.a, lib/libshim.so*   static archive and shared library (SONAME libshim.so.N)
#   lib/libshim_fmt.a                fmt's compiled part, for fully static vendor shims
#                                    (Debian ships no libfmt.a)
#   lib/cmake/libshim/               libshimConfig.cmake, version file, exported targets
#   lib/pkgconfig/libshim.pc
#   libexec/libshim/                 containerd-shim-runc-v2, containerd-shim-example-v1,
#                                    containerd-shim-wasm-v1 (LIBSHIM_WASM)
#   share/doc/<package>/             copyright, changelog, the containerd config snippets
# Every path is relative to the prefix (GNUInstallDirs; the CMake package and libshim.pc
# find the prefix from where they are), so an installed tree can be moved.
#
# Components, one per Debian package (cmake/LibshimDeb.cmake):
#   runtime       libshim<N>             the shared library (N: LIBSHIM_SOVERSION)
#   dev           libshim-dev            headers, libshim.a, libshim.so, CMake package, .pc
#   runc_shim     libshim-runc-shim      our containerd-shim-runc-v2
#   example_shim  libshim-example-shim   containerd-shim-example-v1
#   wasm_shim     libshim-wasm-shim      containerd-shim-wasm-v1 (built with LIBSHIM_WASM)
include(CMakePackageConfigHelpers)

set(LIBSHIM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/libshim)
# Not on PATH: Debian's containerd package owns /usr/bin/containerd-shim-runc-v2, and
# containerd is pointed at ours by path (docs/containerd-config.md).
set(LIBSHIM_SHIM_DIR ${CMAKE_INSTALL_LIBEXECDIR}/libshim)

# --- headers ---------------------------------------------------------------------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/libshim/include/shim
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.h")
# The generated headers (and their .proto) of shim_proto only: the public headers include
# them. The cgroup metrics messages stay inside libshim.
get_target_property(libshim_pb_headers shim_proto LIBSHIM_GENERATED_HEADERS)
get_target_property(libshim_pb_protos shim_proto LIBSHIM_PROTOS)
foreach(proto ${libshim_pb_protos})
  get_filename_component(dir ${proto} DIRECTORY)
  string(REGEX REPLACE "\\.proto$" ".pb.h" header ${proto})
  install(FILES ${PROJECT_BINARY_DIR}/proto/${header} ${PROJECT_SOURCE_DIR}/proto/${proto}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir} COMPONENT dev)
endforeach()

# --- libraries and the CMake package ----------------------------------------------------
install(TARGETS shim libshim_fmt EXPORT libshimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(TARGETS shim_shared EXPORT libshimTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(EXPORT libshimTargets NAMESPACE libshim:: DESTINATION ${LIBSHIM_CMAKE_DIR} COMPONENT dev)

# The exact dependency versions libshim was built with: its headers embed protobuf's
# generated code (which refuses another protobuf version) and Boost types.
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" LIBSHIM_PROTOBUF_MINOR "${Protobuf_VERSION}")
math(EXPR libshim_next "${CMAKE_MATCH_2} + 1")
set(LIBSHIM_PROTOBUF_NEXT_MINOR "${CMAKE_MATCH_1}.${libshim_next}")
set(LIBSHIM_BOOST_MINOR "${Boost_VERSION_MAJOR}.${Boost_VERSION_MINOR}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/libshimConfig.cmake.in
  ${PROJECT_BINARY_DIR}/libshimConfig.cmake INSTALL_DESTINATION ${LIBSHIM_CMAKE_DIR}
  PATH_VARS LIBSHIM_SHIM_DIR)
# 0.x: a new minor version may break the API (docs/versioning.md), so 0.2 accepts 0.2.*.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/libshimConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/libshimConfig.cmake ${PROJECT_BINARY_DIR}/libshimConfigVersion.cmake
        DESTINATION ${LIBSHIM_CMAKE_DIR} COMPONENT dev)

# libshim.pc finds its prefix from its own place (${pcfiledir}), like the CMake package.
set(libshim_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH LIBSHIM_PC_PREFIX_FROM_PCDIR /${libshim_pc_dir} /)
string(REGEX REPLACE "/$" "" LIBSHIM_PC_PREFIX_FROM_PCDIR "${LIBSHIM_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/libshim.pc.in ${PROJECT_BINARY_DIR}/libshim.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/libshim.pc DESTINATION ${libshim_pc_dir} COMPONENT dev)

# --- the shims ---------------------------------------------------------------------------
# Built dynamic (LIBSHIM_STATIC_SHIMS=OFF), the installed shims find libshim.so in the
# prefix they were installed to: containerd starts shims with its own environment.
file(RELATIVE_PATH libshim_shim_to_lib /${LIBSHIM_SHIM_DIR} /${CMAKE_INSTALL_LIBDIR})
foreach(shim containerd-shim-runc-v2 containerd-shim-example-v1 containerd-shim-wasm-v1)
  if(TARGET ${shim} AND NOT LIBSHIM_STATIC_LINK)
    set_target_properties(${shim} PROPERTIES INSTALL_RPATH "$ORIGIN/${libshim_shim_to_lib}")
  endif()
endforeach()
if(TARGET containerd-shim-runc-v2)
  install(TARGETS containerd-shim-runc-v2 RUNTIME DESTINATION ${LIBSHIM_SHIM_DIR} COMPONENT runc_shim)
  # How to point containerd at it, with the config files that doc shows.
  install(FILES ${PROJECT_SOURCE_DIR}/docs/containerd-config.md
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libshim-runc-shim COMPONENT runc_shim)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/packaging/containerd/
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libshim-runc-shim/examples COMPONENT runc_shim)
endif()
if(TARGET containerd-shim-example-v1)
  install(TARGETS containerd-shim-example-v1 RUNTIME DESTINATION ${LIBSHIM_SHIM_DIR}
          COMPONENT example_shim)
endif()

if(TARGET containerd-shim-wasm-v1)
  # The zygote beside it: the shim looks for it next to its own executable.
  install(TARGETS containerd-shim-wasm-v1 libshim-wasm-zygote RUNTIME DESTINATION ${LIBSHIM_SHIM_DIR}
          COMPONENT wasm_shim)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/wasm.md
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libshim-wasm-shim COMPONENT wasm_shim)
endif()

include(LibshimDeb)
