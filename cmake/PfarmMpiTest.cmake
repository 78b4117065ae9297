# pfarm_mpi_test(<name> <target> RANKS <n> [TIMEOUT <s>] [ARGS ...])
# The one way pfarm runs an MPI test: through MPIEXEC_EXECUTABLE with a fixed process count. Oversubscription
# is allowed here (CI has 2 cores and tests use up to 5 ranks), and so is running as root (CI runs as root),
# so nobody sets these by hand.
#
# pfarm_mpiexec(<var> <ranks>) sets <var> to the same launcher (MPIEXEC_EXECUTABLE and its flags, the program
# and MPIEXEC_POSTFLAGS follow) for a test that starts MPI programs itself; such a test sets its ENVIRONMENT
# to PFARM_MPI_TEST_ENVIRONMENT.
set(PFARM_MPI_TEST_ENVIRONMENT
    "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none")

function(pfarm_mpiexec var ranks)
  set(flags ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS})
  if(MPI_CXX_LIBRARY_VERSION_STRING MATCHES "Open MPI")
    list(APPEND flags --oversubscribe)
  endif()
  set(${var} ${MPIEXEC_EXECUTABLE} ${flags} PARENT_SCOPE)
endfunction()

function(pfarm_mpi_test name target)
  cmake_parse_arguments(arg "" "RANKS;TIMEOUT" "ARGS" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  pfarm_mpiexec(launcher ${arg_RANKS})
  add_test(NAME ${name} COMMAND ${launcher} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${arg_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT} PROCESSORS ${arg_RANKS} LABELS mpi
    ENVIRONMENT "${PFARM_MPI_TEST_ENVIRONMENT}")
endfunction()

# pfarm_python_test(<name> <test file> RANKS <n> [TIMEOUT <s>])
# A pytest file of tests/python under the same launcher, run by the interpreter the Python package is built for
# (PFARM_PYTHON), importing the package from the build tree. Labels python and mpi. Each test is named as it runs
# (-v, unbuffered), and one that runs past 100 s has every thread's stack printed (faulthandler_timeout), so a
# test that hangs says where.
function(pfarm_python_test name file)
  cmake_parse_arguments(arg "" "RANKS;TIMEOUT" "" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  get_property(python_path GLOBAL PROPERTY PFARM_PYTHON_PATH)
  pfarm_mpiexec(launcher ${arg_RANKS})
  add_test(NAME ${name} COMMAND ${launcher} ${PFARM_PYTHON} ${MPIEXEC_POSTFLAGS} -m pytest -v --color=no
                                -p no:cacheprovider -o faulthandler_timeout=100 ${file})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT} PROCESSORS ${arg_RANKS} LABELS "python;mpi"
    ENVIRONMENT "${PFARM_MPI_TEST_ENVIRONMENT};PYTHONPATH=${python_path};PYTHONDONTWRITEBYTECODE=1;PYTHONUNBUFFERED=1")
endfunction()
