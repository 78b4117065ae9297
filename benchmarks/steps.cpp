// pfarm-bench-steps: what a schedule that learns across calls saves a time-stepping code (using-pfarm.md). The same
// loop is farmed --steps times with a fresh calibration every call, and --steps times with one pfarm::schedule
// passed to every call (only the first calibrates), interleaved call by call so that both see the same machine.
//
//   mpiexec -n N pfarm-bench-steps [--steps S] [--tasks T] [--task-us U] [--technique multi] [--slowdown F,...]
//                                  [--output FILE]
//
// A task spins for U microseconds of wall time (a fixed cost whatever the load, so the emulated slowdown of
// --slowdown, PFARM_SLOWDOWN's format, makes the workers heterogeneous, as in the paper's experiments). Prints
// per mode the median and total time per step, the calibration's cost (the learned calls' saving), and the
// ratio learned / calibrating of the total (below 1: the schedule saves time); --output writes the same as JSON.
#include "pfarm/emulation.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/output_file.hpp"
#include "pfarm/testing.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

namespace {

void spin(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
    }
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CLI::App app{"pfarm-bench-steps: the same loop farmed every step, calibrating each time or with a learned schedule"};
    int steps = 50;
    long long tasks = 400;
    double task_us = 200.0;
    std::string technique = "multi", slowdown, output;
    app.add_option("--steps", steps, "calls of each mode")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--tasks", tasks, "tasks per call")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--task-us", task_us, "microseconds one task spins")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--technique", technique, "a technique that calibrates (multi, dealdyn-sm, dtss, ...)")->capture_default_str();
    app.add_option("--slowdown", slowdown, "emulated slowdown per rank, f0,f1,... (>= 1)");
    app.add_option("--output", output, "write the figures as JSON");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {  // as the other tools: help and 0, or the message and 2 (usage)
        if (e.get_exit_code() == 0) return rank == 0 ? app.exit(e) : 0;
        if (rank == 0) std::fprintf(stderr, "pfarm-bench-steps: %s\n", e.what());
        return 2;
    }
    try {
        // --output before any step, an existing file left as it is: rank 0 checks, every rank learns it.
        std::string unwritable;
        if (rank == 0 && !output.empty()) {
            try {
                pfarm::check_output_path(output, "--output");
            } catch (const pfarm::invalid_argument& e) {
                unwritable = e.what();
            }
        }
        int refused = unwritable.empty() ? 0 : 1;
        MPI_Bcast(&refused, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (refused) throw pfarm::error(rank == 0 ? unwritable : "--output: rank 0 cannot write it");
        pfarm::farm_options options;
        options.schedule.technique = technique;
        const std::vector<double> factors = slowdown.empty() ? std::vector<double>{} : pfarm::parse_numbers(slowdown, "--slowdown");
        if (!factors.empty()) options.emulation = pfarm::testing::emulate(factors);
        std::vector<double> out(static_cast<std::size_t>(tasks));
        const double seconds = task_us * 1e-6;
        auto call = [&](pfarm::schedule* learned, bool& calibrated) {
            pfarm::farm_options o = options;
            o.schedule.learned = learned;
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            const auto r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out,
                                       [seconds](pfarm::task_count, double& y) { spin(seconds), y = 1.0; }, o);
            const double t = MPI_Wtime() - t0;
            calibrated = r.calibration.has_value() && !r.learned;
            return t;
        };
        pfarm::schedule learned;
        std::vector<double> fresh_times, learned_times;
        int fresh_calibrations = 0, learned_calibrations = 0;
        for (int s = 0; s < steps; ++s) {  // interleaved: both modes see the same machine
            bool calibrated = false;
            fresh_times.push_back(call(nullptr, calibrated));
            fresh_calibrations += calibrated;
            learned_times.push_back(call(&learned, calibrated));
            learned_calibrations += calibrated;
        }
        // Rank 0 reports and writes --output (whole or not at all); a failed write (a full disk) fails every rank.
        const auto report = [&] {
            const double fresh_total = std::accumulate(fresh_times.begin(), fresh_times.end(), 0.0);
            const double learned_total = std::accumulate(learned_times.begin(), learned_times.end(), 0.0);
            int ranks = 0;
            MPI_Comm_size(MPI_COMM_WORLD, &ranks);
            nlohmann::ordered_json j;
            j["benchmark"] = "steps";
            j["ranks"] = ranks;
            j["technique"] = technique;
            j["steps"] = steps;
            j["tasks"] = tasks;
            j["task_us"] = task_us;
            j["slowdown"] = factors;
            j["calibrating"] = {{"median_step_s", median(fresh_times)}, {"total_s", fresh_total}, {"calibrations", fresh_calibrations}};
            j["learned"] = {{"median_step_s", median(learned_times)}, {"total_s", learned_total}, {"calibrations", learned_calibrations}};
            j["ratio_learned_over_calibrating"] = learned_total / fresh_total;
            std::printf("steps: %d calls of %lld tasks x %.0f us on %d ranks, %s\n", steps, tasks, task_us, ranks, technique.c_str());
            std::printf("  calibrating every call: median %.4f s per step, total %.3f s, %d calibrations\n", median(fresh_times),
                        fresh_total, fresh_calibrations);
            std::printf("  learned schedule:       median %.4f s per step, total %.3f s, %d calibration(s)\n",
                        median(learned_times), learned_total, learned_calibrations);
            std::printf("  ratio learned / calibrating (total): %.3f\n", learned_total / fresh_total);
            if (!output.empty()) pfarm::write_output_file(output, "--output", j.dump(2) + "\n");
        };
        std::string failed;
        if (rank == 0) {
            try {
                report();
            } catch (const pfarm::error& e) {
                failed = e.what();
            }
        }
        int bad = failed.empty() ? 0 : 1;
        MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (bad) throw pfarm::error(rank == 0 ? failed : "--output: rank 0 could not write it");
        return 0;
    } catch (const std::exception& e) {
        if (rank == 0) std::fprintf(stderr, "pfarm-bench-steps: %s\n", e.what());
        return 2;
    }
}
