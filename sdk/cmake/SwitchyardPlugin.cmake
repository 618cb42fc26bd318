# switchyard_add_plugin(<name> SOURCES <src>... [LINK_LIBRARIES <lib>...]
#                       [OUTPUT_DIRECTORY <dir>] [INCLUDE_DIRECTORIES <dir>...] [NO_SDK])
#
# Builds libswitchyard-<name>.so as a MODULE with hidden visibility and a version script, so
# that the only exported symbol is sy_plugin_v1. The target is called switchyard_plugin_<name>.
# NO_SDK leaves out Switchyard::sdk (fixtures that compile against frozen copies of old
# headers pass those with INCLUDE_DIRECTORIES instead).
set(_SWITCHYARD_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/switchyard_plugin.map")

function(switchyard_add_plugin name)
  cmake_parse_arguments(ARG "NO_SDK" "OUTPUT_DIRECTORY"
                        "SOURCES;LINK_LIBRARIES;INCLUDE_DIRECTORIES" ${ARGN})
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "switchyard_add_plugin: '${name}' is not a valid plugin name ([a-z0-9_]+)")
  endif()
  set(target switchyard_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "switchyard-${name}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED SWITCHYARD_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${SWITCHYARD_PLUGIN_OUTPUT_DIR}")
  endif()
  if(NOT ARG_NO_SDK)
    target_link_libraries(${target} PRIVATE Switchyard::sdk)
  endif()
  if(ARG_INCLUDE_DIRECTORIES)
    target_include_directories(${target} PRIVATE ${ARG_INCLUDE_DIRECTORIES})
  endif()
  if(ARG_LINK_LIBRARIES)
    target_link_libraries(${target} PRIVATE ${ARG_LINK_LIBRARIES})
  endif()
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${_SWITCHYARD_PLUGIN_MAP}" "LINKER:--no-undefined")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_SWITCHYARD_PLUGIN_MAP}")
endfunction()
