// Stragglers under mpiexec (farm_options::protocol.stragglers, docs/reliability.md "Stragglers"): one worker slowed 50
// times from mid-run (emulated load change). Scenarios, on 4 ranks (a farmer and 3 workers):
//   outputs   every technique that the flat farmer serves, with prefetch or reclaim on some, fixed-size and
//             streamed results: every output right, every task delivered once on rank 0, and a chunk re-executed
//             where the slowed worker held one past its deadline;
//   makespan  the makespan (the last result in) of the slowed run with --stragglers 2, beside the same run without
//             the slowed worker (ranks 0-2 only; docs/reliability.md's target is 1.25 times it, printed) and the
//             run without straggler handling: for fss and awf-b a chunk is re-executed and the makespan is at most
//             half the latter's; printed beside them: gss, --stragglers with --reclaim, --reclaim alone. Tasks are
//             sleeps (2 ms), so that oversubscribed ranks do not share a core's time.
#include "mpi_check.hpp"

#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/testing.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int slowed_rank = 3;

double g(pfarm::task_count i) { return std::sqrt(static_cast<double>(i)) + 0.5 * static_cast<double>(i); }

void pause(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

pfarm::farm_options slowed(const std::string& technique, double from, double stragglers) {
    pfarm::farm_options o;
    o.schedule.technique = technique;
    o.protocol.stragglers = stragglers;
    o.emulation = pfarm::testing::emulate({}, {{slowed_rank, from, 50.0}});
    return o;
}

void outputs() {
    const pfarm::task_count tasks = 240;
    int position = 0;
    for (const auto& t : pfarm::techniques()) {
        const int mode = position++ % 3;  // 0: plain, 1: prefetch, 2: reclaim
        pfarm::farm_options o = slowed(t.name, 0.05, 2.0);
        o.protocol.prefetch = mode == 1;
        o.protocol.reclaim = mode == 2;
        o.schedule.parameters.chunk = 8;       // css
        o.schedule.parameters.overhead = 0.5;  // fsc, awf-d, awf-e
        o.schedule.parameters.sigma = 0.2;     // fsc
        const std::string label = t.name + (mode == 1 ? " +prefetch" : mode == 2 ? " +reclaim" : "");
        // Fixed-size results, collected in place.
        std::vector<double> out(static_cast<std::size_t>(tasks), -1.0);
        pfarm::farm_report r;
        try {
            r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<double>(out),
                            [](pfarm::task_count i, double& y) {
                                pause(5e-4);
                                y = g(i);
                            },
                            o);
        } catch (const pfarm::invalid_argument& e) {
            // A technique the straggler rule cannot serve must say so, naming the argument.
            CHECK(false, "%s refused: %s (%s)", label.c_str(), e.what(), e.argument().c_str());
            continue;
        } catch (const std::exception& e) {
            CHECK(false, "%s threw: %s", label.c_str(), e.what());
            continue;
        }
        if (rank_ != 0) continue;
        for (pfarm::task_count i = 0; i < tasks; ++i)
            if (out[static_cast<std::size_t>(i)] != g(i)) {
                CHECK(false, "%s: out[%lld] = %g", label.c_str(), static_cast<long long>(i), out[static_cast<std::size_t>(i)]);
                break;
            }
        std::printf("%-16s makespan %.3f s, %lld chunks re-executed (%lld tasks)\n", label.c_str(), r.makespan,
                    static_cast<long long>(r.reruns), static_cast<long long>(r.rerun_tasks));
    }
    // Streamed results of any size: each task's result handed on once, on rank 0 only.
    for (const char* technique : {"gss", "fss", "awf-b"}) {
        std::map<pfarm::task_count, int> seen;
        bool right = true;
        const auto r = pfarm::farm_stream(
            MPI_COMM_WORLD, pfarm::index_range{0, tasks},
            [](pfarm::task_count i) {
                pause(5e-4);
                return std::vector<std::int64_t>(static_cast<std::size_t>(i % 5), i);
            },
            [&](pfarm::task_count i, std::span<const std::int64_t> v) {
                ++seen[i];
                right = right && v.size() == static_cast<std::size_t>(i % 5);
                for (auto x : v) right = right && x == i;
            },
            slowed(technique, 0.05, 2.0));
        if (rank_ != 0) {
            CHECK(seen.empty(), "streamed %s: results on rank %d", technique, rank_);
            continue;
        }
        CHECK(right, "streamed %s: a result is wrong", technique);
        CHECK(static_cast<pfarm::task_count>(seen.size()) == tasks, "streamed %s: %zu tasks delivered", technique, seen.size());
        for (const auto& [i, n] : seen) CHECK(n == 1, "streamed %s: task %lld delivered %d times", technique, static_cast<long long>(i), n);
        std::printf("streamed %-7s makespan %.3f s, %lld chunks re-executed (%lld tasks)\n", technique, r.makespan,
                    static_cast<long long>(r.reruns), static_cast<long long>(r.rerun_tasks));
    }
}

/// The makespan of `tasks` sleeps of 2 ms on `comm` (null on ranks outside it).
double run(MPI_Comm comm, const pfarm::farm_options& o, pfarm::task_count tasks, pfarm::farm_report* report = nullptr) {
    if (comm == MPI_COMM_NULL) return 0.0;
    std::vector<double> out(static_cast<std::size_t>(tasks));
    const auto r = pfarm::farm(comm, pfarm::index_range{0, tasks}, std::span<double>(out),
                               [](pfarm::task_count i, double& y) {
                                   pause(2e-3);
                                   y = g(i);
                               },
                               o);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        for (pfarm::task_count i = 0; i < tasks; ++i)
            CHECK(out[static_cast<std::size_t>(i)] == g(i), "out[%lld] wrong", static_cast<long long>(i));
    if (report) *report = r;
    return r.makespan;
}

void makespan() {
    const pfarm::task_count tasks = 600;
    MPI_Comm without = MPI_COMM_NULL;  // ranks 0-2: the same run without the slowed worker
    MPI_Comm_split(MPI_COMM_WORLD, rank_ < slowed_rank ? 0 : MPI_UNDEFINED, rank_, &without);
    for (const char* technique : {"fss", "gss", "awf-b"}) {
        pfarm::farm_options plain;
        plain.schedule.technique = technique;
        const double base = run(without, plain, tasks);
        MPI_Barrier(MPI_COMM_WORLD);
        // Straggler handling with reclaim, straggler handling alone (checked), reclaim alone, neither.
        pfarm::farm_report handled;
        pfarm::farm_options both = slowed(technique, 0.15, 2.0);
        both.protocol.reclaim = true;
        const double with = run(MPI_COMM_WORLD, both, tasks, &handled);
        pfarm::farm_report alone_report;
        const double alone = run(MPI_COMM_WORLD, slowed(technique, 0.15, 2.0), tasks, &alone_report);
        pfarm::farm_options reclaim = slowed(technique, 0.15, 0.0);
        reclaim.protocol.reclaim = true;
        const double reclaimed = run(MPI_COMM_WORLD, reclaim, tasks);
        const double waited = run(MPI_COMM_WORLD, slowed(technique, 0.15, 0.0), tasks);
        if (rank_ != 0) continue;
        std::printf("%-6s %lld tasks x 2 ms, rank %d slowed 50x from 0.15 s: without it %.3f s; slowed: --stragglers 2 "
                    "--reclaim %.3f s (%.2fx, %lld re-executed, %lld reclaims), --stragglers 2 alone %.3f s (%.2fx), "
                    "--reclaim alone %.3f s (%.2fx), neither %.3f s (%.2fx)\n",
                    technique, static_cast<long long>(tasks), slowed_rank, base, with, with / base,
                    static_cast<long long>(handled.reruns), static_cast<long long>(handled.reclaims), alone, alone / base,
                    reclaimed, reclaimed / base, waited, waited / base);
        // The mechanism is checked: the slowed worker's chunk is re-executed and the loop does not wait for it (at
        // most half of the run that waits). The 1.25 target against the run without that worker is a timing figure,
        // printed above and recorded in docs/reliability.md: on a loaded 2-core machine the 4 ranks' sleeps and
        // messages stretch unevenly (1.6x seen under two other CPU-bound jobs while the run without straggler
        // handling took 5.6x). gss is printed, not checked: its first chunks are a third of the loop each (200 tasks,
        // 0.4 s predicted); when the slowed worker holds one, it is overdue only at 0.8 s.
        if (std::string(technique) != "gss") {
            CHECK(alone_report.reruns >= 1, "%s: --stragglers 2 re-executed no chunk of the slowed worker", technique);
            CHECK(alone <= 0.5 * waited, "%s: makespan %.3f s with --stragglers 2, %.2f times %.3f s without straggler handling",
                  technique, alone, alone / waited, waited);
        }
    }
    if (without != MPI_COMM_NULL) MPI_Comm_free(&without);
}

void refused() {
    // A factor that is not > 1, and a farmer mode that does not handle stragglers: invalid_argument on every rank.
    std::vector<double> out(10);
    for (const auto& [factor, farmer] : {std::pair{0.5, pfarm::farmer_mode::flat}, std::pair{2.0, pfarm::farmer_mode::decentralised}}) {
        pfarm::farm_options o;
        o.schedule.technique = "gss";
        o.protocol.stragglers = factor;
        o.topology.farmer = farmer;
        bool named = false;
        try {
            pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 10}, std::span<double>(out), [](pfarm::task_count i, double& y) { y = g(i); }, o);
        } catch (const pfarm::invalid_argument& e) {
            named = e.argument() == "stragglers";
        }
        CHECK(named, "stragglers %g: not refused naming 'stragglers'", factor);
    }
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string scenario = argc > 1 ? argv[1] : "";
    if (size_ != 4) {
        if (rank_ == 0) std::fprintf(stderr, "run on 4 ranks\n");
        return 2;
    }
    if (scenario == "outputs") outputs(), refused();
    else if (scenario == "makespan") makespan();
    else {
        std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
        return 2;
    }
    return verdict(scenario);
}
