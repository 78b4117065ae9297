// pfarm: latency to the farmer, by MPI ping-pong in the farm's own duplicated communicator (the l_i of
// Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in heterogeneous systems": the
// latency that multivariate statistical calibration regresses on). A monitor of pfarm::monitors' interface;
// it lives in pfarm::skeleton because it needs MPI.
#pragma once

#include "pfarm/monitor.hpp"

#include <mpi.h>

#include <vector>

namespace pfarm::mpi {

struct latency_options {
    /// Timed round trips per worker; the median is the latency (an odd count gives a measured value).
    int round_trips = 11;
    /// Untimed round trips first (connection set-up, first-touch of buffers).
    int warmup = 2;
    /// The tag of the probe's messages on the farm's communicator; the farm protocol leaves it alone.
    int tag = 32000;
};

/// Farmer side of one probe: warmup + round_trips ping-pongs of one byte with `peer`, who must call
/// pong(comm, <this rank>, options) at the same time. Returns the median round trip in seconds (MPI_Wtime).
/// Throws invalid_argument on a bad peer or option, mpi_error on an MPI failure.
double ping(MPI_Comm comm, int peer, const latency_options& options = {});

/// Worker side of one probe: answers the ping of rank `peer`.
void pong(MPI_Comm comm, int peer, const latency_options& options = {});

/// Collective over `comm`: every rank calls it at the same point. Rank 0 (the farmer) probes ranks 1, 2, ...
/// in turn while the others wait for their turn; the result is broadcast. Returns, on every rank, one entry
/// per rank: entry r is rank r's median round trip to rank 0 in seconds, entry 0 is 0.
/// Pass the farm's duplicated communicator (pfarm::mpi::communicator::get()), never the user's.
std::vector<double> measure_latencies(MPI_Comm comm, const latency_options& options = {});

/// The latency monitor: read() calls measure_latencies, so it is collective too (every rank of `comm`
/// reads at the same point), and returns latency = this rank's round trip to rank 0 (0 on rank 0).
/// `comm` must outlive the monitor.
class latency_monitor final : public pfarm::monitor {
public:
    explicit latency_monitor(MPI_Comm comm, latency_options options = {});
    std::string name() const override { return "latency"; }
    resource_sample read() override;
    /// Every rank's latency from the last read() (empty before the first).
    const std::vector<double>& all() const noexcept { return all_; }

private:
    MPI_Comm comm_;
    latency_options options_;
    std::vector<double> all_;
};

}  // namespace pfarm::mpi
