// The startup's bound (pfarm::mpi::guard_startup, docs/reliability.md "A lost worker") under Open MPI's recovery mode,
// one scenario per run (argv[1]); tests/mpi/startup_guard.sh checks each rank's exit status and standard error:
//   killed  rank 2 kills itself (SIGKILL) before the farm: the others wait in the farm's setup, and the bound (1 s)
//           ends each with status 4 and the message
//   ok      a farm of about 3 s on every rank with a bound of 1 s: the farm's setup ends the guard, so the farm
//           completes and every rank exits 0
//   unarrived  rank 2 kills itself past MPI_Init, before the setup's end (end_setup): rank 1 has come to it, rank 0
//           waits for rank 2, and neither begins the farm: both end with status 4 (never rank 0 alone, the others
//           then waiting for it in the farm)
//   arrived rank 2 comes to the setup's end and kills itself before rank 0's go: rank 0 has every rank, and both it
//           and rank 1 pass (rank 2 is then a worker lost in the farm); each says "passed" and exits 0
//   bound   (no MPI) PFARM_STARTUP_TIMEOUT read by startup_bound_seconds: its default, a value, 0 (off), and the
//           refusals naming the variable
#include "engine.hpp"
#include "messages.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

int check_bound() {
    int failed = 0;
    const auto expect = [&](const char* value, double want) {
        if (value) ::setenv("PFARM_STARTUP_TIMEOUT", value, 1);
        else ::unsetenv("PFARM_STARTUP_TIMEOUT");
        try {
            const double got = pfarm::mpi::startup_bound_seconds();
            if (want < 0.0 || got != want) ++failed, std::fprintf(stderr, "'%s': %g\n", value ? value : "(unset)", got);
        } catch (const pfarm::invalid_argument& e) {
            if (want >= 0.0 || e.argument() != "PFARM_STARTUP_TIMEOUT")
                ++failed, std::fprintf(stderr, "'%s': %s\n", value ? value : "(unset)", e.what());
        }
    };
    expect(nullptr, 120.0), expect("2.5", 2.5), expect("0", 0.0);
    for (const char* bad : {"abc", "-1", "", "10s", "inf", "nan"}) expect(bad, -1.0);
    std::printf("bound: %s\n", failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string scenario = argc > 1 ? argv[1] : "ok";
    if (scenario == "bound") return check_bound();
    pfarm::mpi::guard_startup(pfarm::mpi::startup_bound_seconds());
    pfarm::mpi::environment env(&argc, &argv);
    int rank = 0, ranks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (scenario == "killed" && rank == 2) raise(SIGKILL);
    if (scenario == "unarrived" || scenario == "arrived") {
        MPI_Barrier(MPI_COMM_WORLD);  // every rank past MPI_Init's fence
        if (rank == 2) {
            if (scenario == "arrived") MPI_Send(nullptr, 0, MPI_BYTE, 0, pfarm::detail::tag_setup, MPI_COMM_WORLD);
            raise(SIGKILL);
        }
        pfarm::detail::end_setup(MPI_COMM_WORLD, rank, ranks);
        std::printf("%s: rank %d passed\n", scenario.c_str(), rank);
        std::fflush(stdout);
        pfarm::mpi::note_lost_ranks();  // MPI_Finalize would wait for rank 2
        return 0;
    }
    std::vector<double> out(60, 0.0);
    const pfarm::farm_report r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 60}, std::span<double>(out),
                                             [](pfarm::task_count i, double& y) {
                                                 std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                                 y = static_cast<double>(i);
                                             });
    if (rank == 0)
        for (int i = 0; i < 60; ++i)
            if (out[static_cast<std::size_t>(i)] != i) return std::fprintf(stderr, "output %d wrong\n", i), 1;
    if (rank == 0) std::printf("%s: farm of %.2f s done\n", scenario.c_str(), r.makespan);
    return 0;
}
