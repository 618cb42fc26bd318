# cmake -DBASH=... -DSCRIPTS=a.sh:b.sh -P parse_scripts.cmake: `bash -n` on each script (the paths
# ':'-separated, which survive add_test where ';' would not); fails naming the first that does not
# parse.
string(REPLACE ":" ";" scripts "${SCRIPTS}")
foreach(script IN LISTS scripts)
  execute_process(COMMAND ${BASH} -n ${script} RESULT_VARIABLE status ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${script} does not parse:\n${errors}")
  endif()
endforeach()
