# CPack post-build step for the Debian packages (cmake/LibshimDeb.cmake): CPack gives the
# package holding libshim.so.N postinst/postrm scripts that call ldconfig; Debian wants
# the ldconfig trigger instead (lintian: maintscript-calls-ldconfig), which the package
# already has. Rebuild libshim<N> without the two scripts; everything else stays as CPack
# made it (files, md5sums, control, triggers, shlibs).
foreach(deb ${CPACK_PACKAGE_FILES})
  get_filename_component(name ${deb} NAME)
  if(NOT name MATCHES "^libshim[0-9]+_")
    continue()
  endif()
  set(tree ${CPACK_TOPLEVEL_DIRECTORY}/fixup-${name})
  file(REMOVE_RECURSE ${tree})
  execute_process(COMMAND dpkg-deb -R ${deb} ${tree} COMMAND_ERROR_IS_FATAL ANY)
  foreach(script postinst postrm)
    file(READ ${tree}/DEBIAN/${script} text)
    if(NOT text MATCHES "ldconfig")
      message(FATAL_ERROR "${name}: ${script} has no ldconfig call: not CPack's, not removing it")
    endif()
    file(REMOVE ${tree}/DEBIAN/${script})
  endforeach()
  file(READ ${tree}/DEBIAN/triggers triggers)
  if(NOT triggers MATCHES "activate-noawait ldconfig")
    message(FATAL_ERROR "${name}: no ldconfig trigger")
  endif()
  execute_process(COMMAND dpkg-deb --root-owner-group -Zxz -b ${tree} ${deb}
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE ${tree})
endforeach()
