// A farm's chunk times under a real CPU quota (chunk_times_test.py starts it inside a cgroup whose quota is argv[1]
// CPUs): every task burns exactly 10 ms of CPU, so that whatever the quota's slices let a chunk run at full speed, the
// time the farmer judges the worker by is at least 10 ms / quota per task (skeleton/mpi/src/quota_time.hpp). Farms of
// multi calibrated on one task per worker (span 0: the first task, which follows the idle setup, runs in the quota's
// unspent slice, 10 ms of wall time), as a farmer and one worker rank (the worker's chunk times) and with rank 0
// computing too (its own worker's, measured apart from the farming between its tasks), then over the automatic span.
// Rank 0 checks each calibration time, prints it and each chunk's wall time, and exits 1 when one is under the bound.
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr double task_cpu = 0.010;

double thread_cpu() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Spins until this thread has used `seconds` of CPU.
double burn(double seconds) {
    volatile double x = 0.0;
    for (const double end = thread_cpu() + seconds; thread_cpu() < end;)
        for (int i = 0; i < 1000; ++i) x = x + 1.0;
    return x;
}

int check(const pfarm::farm_report& r, double quota, const char* what) {
    const double bound = task_cpu / quota * 0.999;
    int bad = 0;
    if (!r.calibration) return std::fprintf(stderr, "%s: no calibration in the report\n", what), 1;
    for (std::size_t w = 0; w < r.calibration->times.size(); ++w) {
        const double t = r.calibration->times[w];
        std::printf("%s: worker %zu calibration time %.4f s per task (bound %.4f)\n", what, w, t, bound);
        if (!(t >= bound)) ++bad;
    }
    for (const auto& c : r.trace) {
        const double wall = (c.finished - c.started) / static_cast<double>(c.count);
        std::printf("%s: rank %d chunk [%lld, +%lld): %.4f s per task of wall time\n", what, c.rank,
                    static_cast<long long>(c.first), static_cast<long long>(c.count), wall);
    }
    if (bad) std::fprintf(stderr, "%s: %d calibration times under %.4f s per task\n", what, bad, bound);
    return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    if (argc != 2) return std::fprintf(stderr, "usage: chunk_times QUOTA_CPUS\n"), 2;
    const double quota = std::strtod(argv[1], nullptr);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int failed = 0;
    struct run {
        bool computes;
        std::optional<double> span;
        const char* what;
    };
    for (const run& f : {run{false, 0.0, "farmer and a worker, span 0"}, run{true, 0.0, "farmer computes, span 0"},
                         run{false, std::nullopt, "farmer and a worker, automatic span"}}) {
        std::vector<double> out(24, -1.0);
        pfarm::farm_options o;
        o.schedule.technique = "multi";
        o.schedule.calibration_span = f.span;
        o.topology.farmer_computes = f.computes;
        o.output.record_trace = true;
        const pfarm::farm_report r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 24}, std::span<double>(out),
                                                 [](pfarm::task_count i, double& y) {
                                                     burn(task_cpu);
                                                     y = static_cast<double>(i);
                                                 },
                                                 o);
        if (rank != 0) continue;
        for (std::size_t i = 0; i < out.size(); ++i)
            if (out[i] != static_cast<double>(i)) ++failed, std::fprintf(stderr, "output %zu is %g\n", i, out[i]);
        failed += check(r, quota, f.what);
    }
    if (rank == 0) std::printf("chunk_times: %s\n", failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}
