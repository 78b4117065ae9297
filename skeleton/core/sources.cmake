# The sources of pfarm::core, relative to skeleton/core: one list, read by its CMakeLists.txt and by the fuzz
# build (tests/fuzz/CMakeLists.txt), which compiles them itself with clang.
set(pfarm_core_sources
  src/chunk_sizes.cpp
  src/claim_schedule.cpp
  src/steal_schedule.cpp
  src/emulation.cpp
  src/farmer.cpp
  src/farmer_reexecution.cpp
  src/farmer_session.cpp
  src/worker_session.cpp
  src/master_session.cpp
  src/hierarchy_plan.cpp
  src/metrics.cpp
  src/report_merge.cpp
  src/registry.cpp
  src/round_robin.cpp
  src/schedule_math.cpp
  src/journal.cpp
  src/schedule.cpp
  src/trace.cpp
  src/techniques/simple.cpp
  src/techniques/weighted.cpp
  src/techniques/two_phase.cpp
  src/techniques/calibrated.cpp
  src/techniques/literature.cpp
  src/techniques/auto.cpp
)
