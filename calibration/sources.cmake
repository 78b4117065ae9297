# The sources of pfarm::calibration, relative to calibration/: one list, read by its CMakeLists.txt and by the fuzz
# build (tests/fuzz/CMakeLists.txt).
set(pfarm_calibration_sources
  src/calibration.cpp
  src/regression.cpp
)
