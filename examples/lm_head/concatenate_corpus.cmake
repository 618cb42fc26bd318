# cmake -DOUTPUT=<file> -DSOURCES=<a|b|c> -P concatenate_corpus.cmake
# Writes the sources one after the other, each preceded by a blank line, into OUTPUT.
string(REPLACE "|" ";" SOURCES "${SOURCES}")
set(corpus "")
foreach(source IN LISTS SOURCES)
  file(READ "${source}" text)
  string(APPEND corpus "${text}\n\n")
endforeach()
if(corpus STREQUAL "")
  message(FATAL_ERROR "No documentation found to build the training corpus from "
          "(README.md, docs/*.md); `switchyard train` would have no data.")
endif()
file(WRITE "${OUTPUT}" "${corpus}")
