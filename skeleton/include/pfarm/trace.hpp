// pfarm scheduling core: the trace record, one per chunk as it ran, kept by the farmer session.
#pragma once

#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"

namespace pfarm {

/// One chunk as it ran (times in seconds since the farm started, on the farmer's clock). `rank` is the
/// worker's rank under MPI and its index in the simulator.
struct chunk_trace {
    int rank = 0;
    task_count first = 0;
    task_count count = 0;
    double sent = 0.0;      ///< the farmer sent it
    double started = 0.0;   ///< the worker started computing
    double finished = 0.0;  ///< the worker finished computing
    double received = 0.0;  ///< its results reached the farmer
    bool calibration = false;
    resource_sample sample;  ///< the worker's monitor readings with its request
};

}  // namespace pfarm
