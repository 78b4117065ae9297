# pfarm_warnings(<target>): the compiler warnings every pfarm target is built with, when PFARM_WARNINGS is on.
function(pfarm_warnings target)
  if(PFARM_WARNINGS)
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic>)
  endif()
endfunction()

# pfarm_library(NAME <target> ALIAS <alias> SOURCES ... INCLUDE <dir>)
# A library of pfarm: C++20 as a usage requirement, warnings on, headers under INCLUDE installed as is.
function(pfarm_library target)
  cmake_parse_arguments(arg "" "ALIAS;INCLUDE" "SOURCES" ${ARGN})
  add_library(${target} STATIC ${arg_SOURCES})
  add_library(${arg_ALIAS} ALIAS ${target})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${arg_ALIAS})
  string(REPLACE "pfarm::" "" export_name ${arg_ALIAS})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  target_compile_features(${target} PUBLIC cxx_std_20)
  pfarm_warnings(${target})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${arg_INCLUDE}>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(PFARM_INSTALL)
    install(DIRECTORY ${arg_INCLUDE}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
  pfarm_install_targets(${target})
endfunction()

# Adds targets to the export set that pfarmConfig.cmake loads.
function(pfarm_install_targets)
  if(PFARM_INSTALL)
    install(TARGETS ${ARGN} EXPORT pfarmTargets
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
            RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
            INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endfunction()

# pfarm_tool(<target> <sources...>): an executable built into <build>/bin and installed to bin/.
function(pfarm_tool target)
  add_executable(${target} ${ARGN})
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  pfarm_warnings(${target})
  if(PFARM_INSTALL)
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endfunction()
