// The decentralised farm (farm_options::topology.farmer = decentralised) under mpiexec. One scenario per run, named by
// argv[1]:
//   techniques  every technique the mode serves (static, deal, ss, css, gss and fss with and without min_chunk,
//               tss, fiss, tfss, fsc, mfsc, dgss with weights) x {farmer computes or not} x {replicated input or not: the workers
//               then hold no input at all and must fetch it} x {prefetch or not}: each task runs exactly once
//               (counted where it ran, summed), the outputs equal a sequential run's, in order; the claims add up
//               (each rank counts its chunks: the report's chunks per rank are those, and all of them sum to the
//               tasks); by_step techniques hand out exactly the flat farmer's round-robin chunks; the trace covers
//               [0, tasks) once, in order
//   errors      techniques that need a farmer (multi, awf-b, af, dgss without weights, n-gss, dfss), reclaim,
//               monitors and masters < 0: the same invalid_argument on every rank, naming the argument
//   failure     a task that throws ends the farm with worker_error naming it on every rank (on a worker, on rank 0
//               computing, with prefetch), nobody hangs, and the next farm on the same communicator runs
//   outputs     three outputs per task of a 64-byte aligned type, with a slowdown on one rank: aligned, in order;
//               64 KiB of results per task, in chunks that travel alone (static) and in batches (ss)
#include "mpi_check.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"
#include "pfarm/testing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

double f(double x) { return std::sin(x) * 3.0 + x; }

struct variant {
    std::string technique;
    pfarm::technique_options parameters;
};

std::vector<variant> served(int workers) {
    std::vector<variant> v;
    for (const char* name : {"static", "deal", "ss", "gss", "fss", "tss", "fiss", "tfss"}) v.push_back({name, {}});
    pfarm::technique_options css;
    css.chunk = 7;
    v.push_back({"css", css});
    pfarm::technique_options min4;
    min4.min_chunk = 4;
    v.push_back({"gss", min4});
    v.push_back({"fss", min4});
    pfarm::technique_options weights;
    for (int w = 0; w < workers; ++w) weights.weights.push_back(1.0 + w % 3);
    v.push_back({"dgss", weights});
    pfarm::technique_options fsc;
    fsc.overhead = 0.01;
    fsc.sigma = 0.5;
    v.push_back({"fsc", fsc});
    v.push_back({"mfsc", {}});
    return v;
}

void techniques() {
    const int tasks = 157;
    std::vector<double> full(tasks), expected(tasks);
    for (int i = 0; i < tasks; ++i) full[static_cast<std::size_t>(i)] = 0.1 * i, expected[static_cast<std::size_t>(i)] = f(0.1 * i);
    for (const bool computes : {false, true}) {
        const int workers = size_ - (computes ? 0 : 1);
        for (const variant& v : served(workers))
            for (const bool replicated : {false, true})
                for (const bool prefetch : {false, true}) {
                    const std::string label = v.technique + (v.parameters.min_chunk > 1 ? "(min 4)" : "") +
                                              (computes ? " computes" : "") + (replicated ? " replicated" : "") +
                                              (prefetch ? " prefetch" : "");
                    // Without replicated input only rank 0 holds the input: the workers' spans are empty.
                    const std::vector<double> in = replicated || rank_ == 0 ? full : std::vector<double>{};
                    std::vector<double> out(rank_ == 0 ? tasks : 0, -1.0);
                    std::vector<int> runs(tasks, 0);
                    long long chunks_seen = 0;
                    pfarm::task_count last_first = -1;
                    pfarm::farm_options o;
                    o.schedule.technique = v.technique;
                    o.schedule.parameters = v.parameters;
                    o.topology.farmer = pfarm::farmer_mode::decentralised;
                    o.topology.farmer_computes = computes;
                    o.protocol.replicated_input = replicated;
                    o.protocol.prefetch = prefetch;
                    o.output.record_trace = true;
                    pfarm::farm_report r;
                    try {
                        r = pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<double>(out),
                                        [&](const double& x, double& y) {
                                            const auto i = static_cast<std::size_t>(std::lround(x * 10.0));
                                            ++runs[i];
                                            if (static_cast<pfarm::task_count>(i) != last_first + 1) ++chunks_seen;
                                            last_first = static_cast<pfarm::task_count>(i);
                                            y = f(x);
                                        },
                                        o);
                    } catch (const std::exception& e) {
                        CHECK(false, "%s: threw %s", label.c_str(), e.what());
                        continue;
                    }
                    std::vector<int> total(tasks, 0);
                    MPI_Reduce(runs.data(), total.data(), tasks, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
                    // Each rank's own chunks: the report's entry for it. Consecutive chunks of one rank may touch
                    // (a rank that claims twice in a row), so the starts it saw are at most its chunks.
                    const auto mine = r.chunks_per_rank[static_cast<std::size_t>(rank_)];
                    const long long claimed = std::accumulate(mine.begin(), mine.end(), 0LL);
                    const long long ran = std::accumulate(runs.begin(), runs.end(), 0LL);
                    CHECK(claimed == ran, "%s: rank %d ran %lld tasks, its report says %lld", label.c_str(), rank_, ran,
                          claimed);
                    CHECK(chunks_seen <= static_cast<long long>(mine.size()), "%s: %lld chunk starts, %zu chunks claimed",
                          label.c_str(), chunks_seen, mine.size());
                    if (!computes && rank_ == 0) CHECK(ran == 0, "%s: rank 0 computed %lld tasks", label.c_str(), ran);
                    if (rank_ != 0) continue;
                    int wrong = 0, twice = 0;
                    for (int i = 0; i < tasks; ++i) {
                        wrong += out[static_cast<std::size_t>(i)] != expected[static_cast<std::size_t>(i)];
                        twice += total[static_cast<std::size_t>(i)] != 1;
                    }
                    CHECK(wrong == 0, "%s: %d outputs differ from the sequential run", label.c_str(), wrong);
                    CHECK(twice == 0, "%s: %d tasks did not run exactly once", label.c_str(), twice);
                    // The claims add up: every rank's chunks sum to the tasks, and the trace covers [0, tasks) in order.
                    long long sum = 0;
                    std::vector<pfarm::task_count> sizes;
                    for (int q = 0; q < size_; ++q) {
                        long long of_rank = 0;
                        for (auto c : r.chunks_per_rank[static_cast<std::size_t>(q)]) of_rank += c, sizes.push_back(c);
                        CHECK(of_rank == r.tasks_per_rank[static_cast<std::size_t>(q)], "%s: rank %d's chunks sum to %lld",
                              label.c_str(), q, of_rank);
                        sum += of_rank;
                    }
                    CHECK(sum == tasks, "%s: the chunks sum to %lld", label.c_str(), sum);
                    CHECK(r.workers == workers, "%s: %d workers", label.c_str(), r.workers);
                    CHECK(r.trace.size() == sizes.size(), "%s: %zu trace records for %zu chunks", label.c_str(),
                          r.trace.size(), sizes.size());
                    pfarm::task_count next = 0;
                    for (const auto& c : r.trace) {
                        CHECK(c.first == next && c.count > 0, "%s: trace record at %lld, expected %lld", label.c_str(),
                              static_cast<long long>(c.first), static_cast<long long>(next));
                        CHECK(c.started <= c.finished && c.finished <= c.received + 1e-3,
                              "%s: record times out of order", label.c_str());
                        next = c.first + c.count;
                    }
                    CHECK(r.makespan > 0.0 && r.percent_imbalance >= 0.0, "%s: makespan %g", label.c_str(), r.makespan);
                    // A by_step technique hands out the flat farmer's round-robin chunks, step by step.
                    if (v.technique != "dgss") {
                        const auto rr = pfarm::schedule_round_robin(v.technique, tasks, workers, v.parameters);
                        std::vector<pfarm::task_count> expected_sizes;
                        for (const auto& h : rr.handouts) expected_sizes.push_back(h.work.count);
                        std::vector<pfarm::task_count> got;
                        for (const auto& c : r.trace) got.push_back(c.count);
                        CHECK(got == expected_sizes, "%s: %zu chunks, the round robin hands out %zu", label.c_str(),
                              got.size(), expected_sizes.size());
                    }
                }
    }
}

void expect_invalid(const std::string& label, const pfarm::farm_options& o, const std::string& argument) {
    std::vector<double> in(rank_ == 0 ? 20 : 0, 1.0), out(in.size());
    int right = 0;
    try {
        pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x; }, o);
        CHECK(false, "%s: no error", label.c_str());
    } catch (const pfarm::invalid_argument& e) {
        right = e.argument() == argument;
        CHECK(right, "%s: argument '%s', expected '%s' (%s)", label.c_str(), e.argument().c_str(), argument.c_str(),
              e.what());
        if (rank_ == 0 && label == "multi") std::printf("multi: %s\n", e.what());
    }
    int all = 0;
    MPI_Allreduce(&right, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all == size_, "%s: %d of %d ranks threw invalid_argument '%s'", label.c_str(), all, size_, argument.c_str());
}

void errors() {
    pfarm::farm_options o;
    o.topology.farmer = pfarm::farmer_mode::decentralised;
    for (const char* name : {"multi", "awf-b", "af", "dgss", "n-gss", "dfss", "dtss", "dealdyn-sm"}) {
        o.schedule.technique = name;
        expect_invalid(name, o, "technique");
    }
    o.schedule.technique = "dfss";  // weighted with state: the stage's start depends on who claimed before
    o.schedule.parameters.weights.assign(static_cast<std::size_t>(size_ - 1), 1.0);
    expect_invalid("dfss with weights", o, "technique");
    o.schedule.parameters = {};
    o.schedule.technique = "gss";
    o.protocol.reclaim = true;
    expect_invalid("reclaim", o, "reclaim");
    o.protocol.reclaim = false;
    o.schedule.monitors = {"loadavg"};
    expect_invalid("monitors", o, "monitors");
    o.schedule.monitors.clear();
    o.topology.farmer = pfarm::farmer_mode::flat;
    o.topology.masters = -1;
    expect_invalid("masters", o, "masters");
}

void failure() {
    const int tasks = 300;
    std::vector<double> in(rank_ == 0 ? tasks : 0), out(in.size());
    for (int i = 0; i < static_cast<int>(in.size()); ++i) in[static_cast<std::size_t>(i)] = i;
    for (const bool computes : {false, true})
        for (const bool prefetch : {false, true})
            for (const char* technique : {"ss", "gss"}) {
                // With rank 0 computing, ss hands task 0 to whoever claims first; 37 lands anywhere.
                const int bad = 37;
                pfarm::farm_options o;
                o.schedule.technique = technique;
                o.topology.farmer = pfarm::farmer_mode::decentralised;
                o.topology.farmer_computes = computes;
                o.protocol.prefetch = prefetch;
                int right = 0;
                try {
                    pfarm::farm(MPI_COMM_WORLD, in, out,
                                [](const double& x, double& y) {
                                    if (static_cast<int>(x) == bad) throw std::runtime_error("bad input 37");
                                    y = x;
                                },
                                o);
                    CHECK(false, "%s: no error", technique);
                } catch (const pfarm::worker_error& e) {
                    right = e.task() == bad && e.message() == "bad input 37";
                    CHECK(right, "%s: task %lld, message '%s'", technique, static_cast<long long>(e.task()),
                          e.message().c_str());
                }
                int all = 0;
                MPI_Allreduce(&right, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                CHECK(all == size_, "%s: %d of %d ranks got worker_error for task 37", technique, all, size_);
            }
    // Rank 0 itself throws: every task fails there, and the others' tasks take 1 ms, so rank 0 claims one.
    {
        pfarm::farm_options o;
        o.schedule.technique = "ss";
        o.topology.farmer = pfarm::farmer_mode::decentralised;
        o.topology.farmer_computes = true;
        o.protocol.replicated_input = true;
        std::vector<double> all_in(2000), all_out(rank_ == 0 ? 2000 : 0);
        int me = 0;
        try {
            pfarm::farm(MPI_COMM_WORLD, all_in, all_out,
                        [](const double&, double&) {
                            if (rank_ == 0) throw std::runtime_error("rank 0 fails");
                            std::this_thread::sleep_for(std::chrono::milliseconds(1));
                        },
                        o);
        } catch (const pfarm::worker_error& e) {
            me = e.rank() == 0 && e.message() == "rank 0 fails";
        }
        int all = 0;
        MPI_Allreduce(&me, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(all == size_, "rank 0's failure reached %d of %d ranks", all, size_);
    }
    // The communicator is still usable: a farm after the failures runs whole.
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    o.topology.farmer = pfarm::farmer_mode::decentralised;
    pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = 2 * x; }, o);
    if (rank_ == 0)
        for (int i = 0; i < tasks; ++i) CHECK(out[static_cast<std::size_t>(i)] == 2.0 * i, "after the failures: task %d", i);
}

struct alignas(64) wide {
    double v[3];
};

void outputs() {
    const int tasks = 91;
    std::vector<std::int32_t> in(rank_ == 0 ? tasks : 0);
    std::iota(in.begin(), in.end(), 0);
    std::vector<wide> out(in.size() * 3);
    int misaligned = 0;
    pfarm::farm_options o;
    o.schedule.technique = "fss";
    o.topology.farmer = pfarm::farmer_mode::decentralised;
    o.topology.farmer_computes = true;
    o.emulation = pfarm::testing::last_rank_slower(size_, 3.0);
    const pfarm::farm_report r =
        pfarm::farm(MPI_COMM_WORLD, std::span<const std::int32_t>(in), std::span<wide>(out),
                    [&](const std::int32_t& x, std::span<wide> y) {
                        misaligned += reinterpret_cast<std::uintptr_t>(y.data()) % 64 != 0;
                        for (int k = 0; k < 3; ++k) y[static_cast<std::size_t>(k)].v[0] = x * 10 + k;
                        const double until = MPI_Wtime() + 2e-4;
                        while (MPI_Wtime() < until) {
                        }
                    },
                    o);
    CHECK(misaligned == 0, "%d outputs misaligned", misaligned);
    if (rank_ == 0) {
        for (int i = 0; i < tasks; ++i)
            for (int k = 0; k < 3; ++k)
                CHECK(out[static_cast<std::size_t>(3 * i + k)].v[0] == i * 10 + k, "task %d output %d", i, k);
        long long sum = 0;
        for (auto n : r.tasks_per_rank) sum += n;
        CHECK(sum == tasks, "the ranks' tasks sum to %lld", sum);
    }
    // 64 KiB of results per task: static's chunks (5 tasks, 320 KiB) travel alone, ss's are batched 4 at a time.
    const int big = 40, per = 8192;
    std::vector<double> inputs(rank_ == 0 ? big : 0), results(inputs.size() * per);
    std::iota(inputs.begin(), inputs.end(), 0.0);
    for (const char* technique : {"static", "ss"}) {
        pfarm::farm_options b;
        b.schedule.technique = technique;
        b.topology.farmer = pfarm::farmer_mode::decentralised;
        pfarm::farm(MPI_COMM_WORLD, std::span<const double>(inputs), std::span<double>(results),
                    [](const double& x, std::span<double> y) {
                        for (std::size_t k = 0; k < y.size(); ++k) y[k] = x * 1e5 + static_cast<double>(k);
                    },
                    b);
        if (rank_ != 0) continue;
        int wrong = 0;
        for (int i = 0; i < big; ++i)
            for (int k = 0; k < per; ++k) wrong += results[static_cast<std::size_t>(i * per + k)] != i * 1e5 + k;
        CHECK(wrong == 0, "%s with 64 KiB per task: %d results wrong", technique, wrong);
    }
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string scenario = argc > 1 ? argv[1] : "";
    if (scenario == "techniques") techniques();
    else if (scenario == "errors") errors();
    else if (scenario == "failure") failure();
    else if (scenario == "outputs") outputs();
    else {
        if (rank_ == 0) std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
        return 2;
    }
    return verdict(scenario);
}
