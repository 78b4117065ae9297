# The fuzz.* tests (included by tests/CMakeLists.txt): fuzz.build builds tests/fuzz with clang, then each
# fuzz.<target> runs its target for a few seconds from its seeds (tests/fuzz/seeds/<target>, tests/data), its
# corpus kept under the build tree. Without clang++ or its libFuzzer runtime (Debian: clang, libclang-rt-14-dev;
# scripts/setup.sh installs both) every fuzz test is reported skipped with the reason (SKIP_RETURN_CODE 77).
set(PFARM_FUZZ_TARGETS numbers options platform costs trace farmer_session app_inputs journal run_commands)  # as in fuzz/CMakeLists.txt
set(PFARM_FUZZ_SECONDS 4 CACHE STRING "seconds each fuzz.<target> test fuzzes")
set(fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz-build)

find_program(PFARM_CLANGXX NAMES clang++ clang++-14 DOC "clang++ for the libFuzzer targets (tests/fuzz)")
set(fuzz_skip "")
if(NOT PFARM_CLANGXX)
  set(fuzz_skip "clang++ not found (apt-get install clang libclang-rt-14-dev)")
else()
  # libFuzzer's runtime is a separate Debian package (libclang-rt-14-dev, only recommended by clang): link a probe.
  set(probe_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz-probe)
  file(WRITE ${probe_dir}/probe.cpp "extern \"C\" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n")
  execute_process(COMMAND ${PFARM_CLANGXX} -fsanitize=fuzzer,address,undefined ${probe_dir}/probe.cpp -o ${probe_dir}/probe
                  RESULT_VARIABLE probe_code OUTPUT_QUIET ERROR_QUIET)
  if(NOT probe_code EQUAL 0)
    set(fuzz_skip "${PFARM_CLANGXX} cannot link -fsanitize=fuzzer,address,undefined (apt-get install libclang-rt-14-dev)")
  endif()
endif()

if(fuzz_skip)
  message(STATUS "pfarm: fuzz tests will be skipped: ${fuzz_skip}")
  foreach(name build ${PFARM_FUZZ_TARGETS})
    add_test(NAME fuzz.${name} COMMAND sh -c "echo 'pfarm fuzz: skipped: ${fuzz_skip}'; exit 77")
    set_tests_properties(fuzz.${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS fuzz)
  endforeach()
  return()
endif()

add_test(NAME fuzz.build
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}/fuzz -DBINARY_DIR=${fuzz_bin}
          -DCXX=${PFARM_CLANGXX} "-DGENERATOR=${CMAKE_GENERATOR}" -DJOBS=2 -P ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/build.cmake)
set_tests_properties(fuzz.build PROPERTIES FIXTURES_SETUP pfarm_fuzz LABELS fuzz TIMEOUT 900 PROCESSORS 2)
foreach(name ${PFARM_FUZZ_TARGETS})
  file(MAKE_DIRECTORY ${fuzz_bin}/corpus/${name} ${fuzz_bin}/artifacts)
  set(seeds ${fuzz_bin}/corpus/${name})  # the first folder: where libFuzzer adds what it finds
  if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/seeds/${name})
    list(APPEND seeds ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/seeds/${name})
  endif()
  if(name MATCHES "^(trace|costs)$")
    list(APPEND seeds ${CMAKE_CURRENT_SOURCE_DIR}/data)
  endif()
  add_test(NAME fuzz.${name}
    COMMAND ${fuzz_bin}/fuzz_${name} -max_total_time=${PFARM_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048
            -artifact_prefix=${fuzz_bin}/artifacts/${name}- ${seeds})
  set_tests_properties(fuzz.${name} PROPERTIES FIXTURES_REQUIRED pfarm_fuzz LABELS fuzz TIMEOUT 120)
endforeach()
