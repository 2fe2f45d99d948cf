# Warnings are errors for our own targets; generated protobuf code is built without them.
function(libshim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-missing-field-initializers)
endfunction()
