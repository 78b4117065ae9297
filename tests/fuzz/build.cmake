# ctest's fuzz.build: configures and builds the libFuzzer targets of tests/fuzz with clang (a sub-build beside the
# main g++ build; ccache is used when CMAKE_CXX_COMPILER_LAUNCHER is set in the environment, as for the main build).
# Arguments: SOURCE_DIR (tests/fuzz), BINARY_DIR, CXX (clang++), GENERATOR, JOBS.
foreach(var SOURCE_DIR BINARY_DIR CXX GENERATOR JOBS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT EXISTS ${BINARY_DIR}/CMakeCache.txt)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -G ${GENERATOR}
                          -DCMAKE_CXX_COMPILER=${CXX}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "configuring the fuzz targets failed:\n${out}")
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} -j ${JOBS}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "building the fuzz targets failed:\n${out}")
endif()
