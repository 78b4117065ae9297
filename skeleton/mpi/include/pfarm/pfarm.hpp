// pfarm: the library in one include (the C++ API; the C API is <pfarm.h>; the simulator is
// <pfarm/simulator.hpp>, target pfarm::sim).
#pragma once

#include "pfarm/calibration.hpp"  // fitness F, CV, k; statistical calibration
#include "pfarm/error.hpp"        // pfarm::error and its family
#include "pfarm/farm.hpp"         // pfarm::farm: the MPI task farm
#include "pfarm/farmer.hpp"       // the transport-free farmer state machine
#include "pfarm/metrics.hpp"      // imbalance, COV
#include "pfarm/monitors.hpp"     // resource monitors
#include "pfarm/mpi.hpp"          // RAII over MPI
#include "pfarm/registry.hpp"     // techniques by name
#include "pfarm/round_robin.hpp"  // chunk sequences (pfarm-chunks)
#include "pfarm/schedule.hpp"     // a schedule that learns across calls
#include "pfarm/trace.hpp"        // the trace schema: records, summary, writer and reader
