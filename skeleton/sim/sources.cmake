# The sources of pfarm::sim, relative to skeleton/sim: one list, read by its CMakeLists.txt and by the fuzz build
# (tests/fuzz/CMakeLists.txt).
set(pfarm_sim_sources
  src/simulator.cpp
  src/simulator_hierarchical.cpp
  src/simulator_decentralised.cpp
  src/simulator_stealing.cpp
  src/simulated_worker.cpp
  src/platform.cpp
  src/predictor.cpp
)
