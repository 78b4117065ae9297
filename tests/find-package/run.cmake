# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DMPIEXEC=<launcher and flags, ;-separated>
#       [-DMPIEXEC_POSTFLAGS=...] [-DC_FLAGS=... -DCXX_FLAGS=... -DEXE_LINKER_FLAGS=...] -P run.cmake
# Installs the build into WORK_DIR/prefix, then configures and builds each consumer project against it (C and
# C++, C++ only, C only) and runs it under MPIEXEC with 2 ranks; then builds the README's examples (extracted by
# tests/readme into BUILD_DIR/tests/readme) against it and runs each with 2 ranks (each checks its own results).
# The consumers get the flags pfarm was built with (C_FLAGS, CXX_FLAGS, EXE_LINKER_FLAGS): an instrumented pfarm
# (-fsanitize=...) links only into instrumented programs.
file(REMOVE_RECURSE ${WORK_DIR})
set(consumer_flags "-DCMAKE_C_FLAGS=${C_FLAGS}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
                   "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
foreach(tool pfarm-chunks pfarm-sim pfarm-run)
  if(NOT EXISTS ${WORK_DIR}/prefix/bin/${tool})
    message(FATAL_ERROR "${tool} was not installed to bin/")
  endif()
endforeach()
foreach(consumer c-cxx cxx c)
  set(build ${WORK_DIR}/build-${consumer})
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/find-package/${consumer} -B ${build}
       -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix ${consumer_flags})
  step(${CMAKE_COMMAND} --build ${build})
  step(${MPIEXEC} ${build}/consumer ${MPIEXEC_POSTFLAGS})
endforeach()
set(build ${WORK_DIR}/build-examples)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/find-package/examples -B ${build} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
     -DEXAMPLES_DIR=${BUILD_DIR}/tests/readme ${consumer_flags})
step(${CMAKE_COMMAND} --build ${build})
file(GLOB examples ${BUILD_DIR}/tests/readme/*.c ${BUILD_DIR}/tests/readme/*.cpp)
foreach(example IN LISTS examples)
  get_filename_component(name ${example} NAME)
  string(REPLACE "." "_" target ${name})
  step(${MPIEXEC} ${build}/${target} ${MPIEXEC_POSTFLAGS})
endforeach()
