# cmake -DKERNEL_DIR=<cache>/vm-kernel -DSTAMP=<file> -P vm-kernel-stamp.cmake
#
# Writes what identifies the fetched guest kernel (cmake/fetch-kernel.sh: its .deb-version
# and module lists) into STAMP, touching STAMP only when that changed, so that the
# initramfs (shim-vm/CMakeLists.txt) is made again exactly when another kernel was
# fetched. No kernel (never fetched, or the cache removed): an empty identity, no error.
set(identity "")
foreach(name .deb-version modules/wanted modules/load-order)
  if(EXISTS "${KERNEL_DIR}/${name}")
    file(READ "${KERNEL_DIR}/${name}" content)
    string(APPEND identity "${name}: ${content}")
  endif()
endforeach()
set(old "")
if(EXISTS "${STAMP}")
  file(READ "${STAMP}" old)
endif()
if(NOT EXISTS "${STAMP}" OR NOT old STREQUAL identity)
  file(WRITE "${STAMP}" "${identity}")
endif()
