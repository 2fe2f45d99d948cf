# WASI modules (wasm32-wasi core modules) built from C with clang's wasm32 target, for the
# Wasm runtime class's tests. Debian: clang, lld-14, wasi-libc and libclang-rt-14-dev-wasm32
# (cmake/install-deps.sh). LIBSHIM_WASI_CC is empty when this toolchain cannot link a module;
# libshim_wasi_module() then does nothing and the tests that need the module skip.
include_guard(GLOBAL)

find_program(LIBSHIM_WASI_CLANG NAMES clang-14 clang DOC "clang with the wasm32-wasi target")
set(LIBSHIM_WASI_SYSROOT "/usr" CACHE PATH
    "wasi-libc's sysroot (Debian: /usr, with /usr/lib/wasm32-wasi and /usr/include/wasm32-wasi)")

# Probe once: compile and link a module that prints (needs crt1, libc and the builtins).
if(NOT DEFINED LIBSHIM_WASI_CC)
  set(probe_dir "${CMAKE_BINARY_DIR}/wasi-probe")
  file(MAKE_DIRECTORY "${probe_dir}")
  file(WRITE "${probe_dir}/probe.c" "#include <stdio.h>\nint main(void) { puts(\"x\"); return 0; }\n")
  set(wasi_cc "")
  if(LIBSHIM_WASI_CLANG)
    execute_process(
      COMMAND "${LIBSHIM_WASI_CLANG}" --target=wasm32-wasi "--sysroot=${LIBSHIM_WASI_SYSROOT}"
              -fuse-ld=lld -O2 -o "${probe_dir}/probe.wasm" "${probe_dir}/probe.c"
      RESULT_VARIABLE probe_result OUTPUT_VARIABLE probe_out ERROR_VARIABLE probe_out)
    if(probe_result EQUAL 0)
      set(wasi_cc "${LIBSHIM_WASI_CLANG}")
    else()
      string(REGEX REPLACE "\n.*" "" probe_first "${probe_out}")
      message(STATUS "WASI modules: ${LIBSHIM_WASI_CLANG} cannot link one (${probe_first}); the Wasm tests will skip")
    endif()
  else()
    message(STATUS "WASI modules: no clang; the Wasm tests will skip")
  endif()
  set(LIBSHIM_WASI_CC "${wasi_cc}" CACHE INTERNAL "clang that links wasm32-wasi modules, or empty")
endif()

# libshim_wasi_module(<target> <out-dir> <source.c>...): one module per source,
# <out-dir>/<name>.wasm, all built by the custom target <target>.
function(libshim_wasi_modules target out_dir)
  set(outputs "")
  if(LIBSHIM_WASI_CC)
    foreach(src IN LISTS ARGN)
      get_filename_component(name "${src}" NAME_WE)
      get_filename_component(abs "${src}" ABSOLUTE)
      set(out "${out_dir}/${name}.wasm")
      add_custom_command(
        OUTPUT "${out}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${out_dir}"
        COMMAND "${LIBSHIM_WASI_CC}" --target=wasm32-wasi "--sysroot=${LIBSHIM_WASI_SYSROOT}"
                -fuse-ld=lld -O2 -Wl,--strip-all -o "${out}" "${abs}"
        DEPENDS "${abs}"
        COMMENT "wasm32-wasi module ${name}.wasm"
        VERBATIM)
      list(APPEND outputs "${out}")
    endforeach()
  endif()
  add_custom_target(${target} ALL DEPENDS ${outputs})
endfunction()
