// The latency probe (pfarm/latency.hpp): ping-pong medians in the farm's duplicated communicator, the same
// result on every rank, no crosstalk with the user's traffic on the parent communicator, clear errors.
// Runs under the MPI test helper with 3 ranks.
#include "pfarm/forecaster.hpp"
#include "pfarm/latency.hpp"
#include "pfarm/mpi.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

namespace {

int failures = 0;

void expect(bool ok, int rank, const char* what) {
    if (ok) return;
    ++failures;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
}

template <class F>
void expect_invalid(F&& body, int rank, const char* argument) {
    try {
        body();
        expect(false, rank, argument);
    } catch (const pfarm::invalid_argument& e) {
        expect(e.argument() == argument, rank, e.what());
    }
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    {
        pfarm::mpi::communicator farm(MPI_COMM_WORLD);
        const int rank = farm.rank(), size = farm.size();
        if (size < 3) {
            std::fprintf(stderr, "needs at least 3 ranks\n");
            return 1;
        }
        const pfarm::mpi::latency_options options;

        // A user's message on the parent communicator with the probe's own tag, pending during the probe.
        const int user_value = 4242;
        if (rank == 0) MPI_Send(&user_value, 1, MPI_INT, 1, options.tag, MPI_COMM_WORLD);

        const std::vector<double> l = pfarm::mpi::measure_latencies(farm.get(), options);
        expect(static_cast<int>(l.size()) == size, rank, "one latency per rank");
        expect(l[0] == 0.0, rank, "rank 0's latency to itself is 0");
        for (int r = 1; r < size; ++r)
            expect(std::isfinite(l[r]) && l[r] > 0 && l[r] < 1.0, rank, "a round trip is positive and below 1 s");
        // Every rank got rank 0's vector.
        std::vector<double> from_root = l;
        MPI_Bcast(from_root.data(), size, MPI_DOUBLE, 0, farm.get());
        expect(from_root == l, rank, "every rank holds the same latencies");

        if (rank == 1) {
            int got = 0;
            MPI_Recv(&got, 1, MPI_INT, 0, options.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            expect(got == user_value, rank, "the user's message on the parent communicator is intact");
        }

        // One pair alone: rank 0 probes rank 2 while rank 1 does nothing; an even count of round trips.
        pfarm::mpi::latency_options even = options;
        even.round_trips = 4;
        even.warmup = 0;
        if (rank == 0) {
            const double t = pfarm::mpi::ping(farm.get(), 2, even);
            expect(std::isfinite(t) && t > 0 && t < 1.0, rank, "ping returns a positive round trip");
        } else if (rank == 2) {
            pfarm::mpi::pong(farm.get(), 0, even);
        }

        // The monitor, and NWS-style forecasts of it: collective reads on every rank.
        pfarm::forecasting_monitor forecast(std::make_unique<pfarm::mpi::latency_monitor>(farm.get()));
        for (int i = 0; i < 5; ++i) {
            const pfarm::resource_sample s = forecast.read();
            expect(s.latency.has_value(), rank, "the latency monitor reads latency");
            expect(rank == 0 ? *s.latency == 0.0 : *s.latency > 0.0, rank, "the forecast latency");
        }
        expect(forecast.name() == "latency+forecast", rank, "monitor name");
        pfarm::mpi::latency_monitor direct(farm.get());
        const pfarm::resource_sample s = direct.read();
        expect(static_cast<int>(direct.all().size()) == size, rank, "all() holds every rank's latency");
        expect(*s.latency == direct.all()[static_cast<std::size_t>(rank)], rank, "read() is this rank's entry");

        // Bad arguments, named (local checks: no rank waits on another).
        expect_invalid([&] { pfarm::mpi::ping(farm.get(), rank, options); }, rank, "peer");
        expect_invalid([&] { pfarm::mpi::ping(farm.get(), size, options); }, rank, "peer");
        expect_invalid([&] { pfarm::mpi::measure_latencies(MPI_COMM_NULL); }, rank, "comm");
        pfarm::mpi::latency_options bad = options;
        bad.round_trips = 0;
        expect_invalid([&] { pfarm::mpi::latency_monitor m(farm.get(), bad); }, rank, "round_trips");
        bad = options;
        bad.tag = -1;
        expect_invalid([&] { pfarm::mpi::measure_latencies(farm.get(), bad); }, rank, "tag");
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) std::printf("%s\n", total == 0 ? "mpi latency: ok" : "mpi latency: FAILED");
    return total == 0 ? 0 : 1;
}
