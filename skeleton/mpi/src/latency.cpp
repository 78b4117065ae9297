// pfarm: the MPI latency probe: ping-pong to rank 0 and the latency monitor built on it (latency.hpp).
#include "pfarm/latency.hpp"

#include "pfarm/memory.hpp"
#include "pfarm/mpi.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace pfarm::mpi {

namespace {

void validate(MPI_Comm comm, const latency_options& o) {
    if (comm == MPI_COMM_NULL) throw invalid_argument("comm", "is MPI_COMM_NULL");
    if (o.round_trips < 1)
        throw invalid_argument("round_trips", "is " + std::to_string(o.round_trips) + "; expected >= 1");
    if (o.warmup < 0) throw invalid_argument("warmup", "is " + std::to_string(o.warmup) + "; expected >= 0");
    if (o.warmup > std::numeric_limits<int>::max() - o.round_trips)  // the loops count warmup + round_trips in an int
        throw invalid_argument("warmup", "is " + std::to_string(o.warmup) + "; expected at most " +
                                             std::to_string(std::numeric_limits<int>::max() - o.round_trips) +
                                             " (2^31 - 1 - round_trips)");
    // A time is kept per round trip: a count no machine here holds is refused before it is allocated.
    check_fits_in_memory(static_cast<std::uint64_t>(o.round_trips), sizeof(double), "round_trips",
                         "is " + std::to_string(o.round_trips) + ": a time kept per round trip");
    int* tag_ub = nullptr;
    int found = 0;
    check(MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
    const int upper = found && tag_ub ? *tag_ub : 32767;
    if (o.tag < 0 || o.tag > upper)
        throw invalid_argument("tag",
                               "is " + std::to_string(o.tag) + "; expected in [0, " + std::to_string(upper) + "]");
}

void validate_peer(MPI_Comm comm, int peer) {
    int rank = 0, size = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    if (peer < 0 || peer >= size || peer == rank)
        throw invalid_argument("peer", "is " + std::to_string(peer) + "; expected another rank in [0, " +
                                           std::to_string(size - 1) + "] than this one (" + std::to_string(rank) + ")");
}

}  // namespace

double ping(MPI_Comm comm, int peer, const latency_options& options) {
    validate(comm, options);
    validate_peer(comm, peer);
    char byte = 0;
    std::vector<double> times;
    times.reserve(static_cast<std::size_t>(options.round_trips));
    for (int i = 0; i < options.warmup + options.round_trips; ++i) {
        const double start = MPI_Wtime();
        check(MPI_Send(&byte, 1, MPI_CHAR, peer, options.tag, comm), "MPI_Send (latency ping)");
        check(MPI_Recv(&byte, 1, MPI_CHAR, peer, options.tag, comm, MPI_STATUS_IGNORE), "MPI_Recv (latency pong)");
        const double elapsed = MPI_Wtime() - start;
        if (i >= options.warmup) times.push_back(std::max(elapsed, 0.0));
    }
    const auto mid = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
    std::nth_element(times.begin(), mid, times.end());
    if (times.size() % 2 == 1) return *mid;
    return (*mid + *std::max_element(times.begin(), mid)) / 2;
}

void pong(MPI_Comm comm, int peer, const latency_options& options) {
    validate(comm, options);
    validate_peer(comm, peer);
    char byte = 0;
    for (int i = 0; i < options.warmup + options.round_trips; ++i) {
        check(MPI_Recv(&byte, 1, MPI_CHAR, peer, options.tag, comm, MPI_STATUS_IGNORE), "MPI_Recv (latency ping)");
        check(MPI_Send(&byte, 1, MPI_CHAR, peer, options.tag, comm), "MPI_Send (latency pong)");
    }
}

std::vector<double> measure_latencies(MPI_Comm comm, const latency_options& options) {
    validate(comm, options);
    int rank = 0, size = 0;
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    std::vector<double> latencies(static_cast<std::size_t>(size), 0.0);
    if (rank == 0) {
        for (int r = 1; r < size; ++r) latencies[static_cast<std::size_t>(r)] = ping(comm, r, options);
    } else {
        pong(comm, 0, options);
    }
    check(MPI_Bcast(latencies.data(), size, MPI_DOUBLE, 0, comm), "MPI_Bcast (latencies)");
    return latencies;
}

latency_monitor::latency_monitor(MPI_Comm comm, latency_options options) : comm_(comm), options_(options) {
    validate(comm_, options_);
}

resource_sample latency_monitor::read() {
    all_ = measure_latencies(comm_, options_);
    int rank = 0;
    check(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
    resource_sample s;
    s.latency = all_[static_cast<std::size_t>(rank)];
    return s;
}

}  // namespace pfarm::mpi
