# Warnings for our own targets; generated protobuf code is built without them.
#
# They are errors only with LIBSHIM_WERROR=ON, which CI sets (tests/run.sh,
# tests/packaging/run.sh). A user's or a distribution's build, with another compiler
# version or its own flags, must never fail on a new warning.
option(LIBSHIM_WERROR "Treat warnings in libshim's own code as errors (CI turns it on)" OFF)

function(libshim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-missing-field-initializers
                                           $<$<BOOL:${LIBSHIM_WERROR}>:-Werror>)
endfunction()
