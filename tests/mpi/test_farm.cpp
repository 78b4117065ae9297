// The MPI farm under mpiexec (through pfarm_mpi_test). One scenario per run, named by argv[1]:
//   techniques  every registered technique (statistical ones read the real monitors) x {plain, farmer computes, prefetch, replicated input}: each task runs
//               exactly once (counted on the rank that ran it, summed), outputs equal a sequential run, in order
//   failure     task 7 of 100 throws: every rank gets pfarm::worker_error naming task 7, nobody hangs
//   edges       the calibration note says when calibration tasks were too short to measure speeds (empty tasks,
//               not 300 us ones); more workers than tasks; zero tasks and an unknown technique give invalid_argument everywhere
//   slowdown    emulated slowdowns 1, 1, 2, 4 on four workers: multi gives the slow ones fewer tasks
//   single      one rank: sequential, and the report says so
//   reclaim     work take-back: every technique x {plain, farmer computes} x {without, with prefetch} with a slow
//               rank and a costly tail, each task exactly once and outputs equal; static moves tasks with and
//               without prefetch (a farm that moves none, under load, is run again up to 3 times); a task that throws in a reclaimed run gives worker_error everywhere
//   alignment   every output element the worker function sees is aligned for its type (alignas(16) and
//               alignas(64), one and three outputs per task), on every rank, with and without prefetch and
//               farmer computes; a monitor of the registry ("hwloc") is accepted in farm_options::schedule.monitors
//               and an unknown one is invalid_argument "monitors" everywhere; inputs and results too large for
//               one message (they follow their header) arrive whole, each task exactly once; a worker rank's
//               first task writes its outputs without a page fault (pfarm's results buffer is touched before the
//               task's timing starts, so a calibration task times the task, not the buffer's first touch)
//   drivers     (3 ranks) the same technique on the same platform makes the same decisions under MPI and in the
//               simulator (pfarm::sim): dtss's chunks with the run queue that an emulated load change gives (one
//               worker, so the request order is fixed), dgss without weights calibrating in both (the source of
//               its weights), and multi's and dgss's calibration (F, CV, k) on workers emulated 1 and 3 times slower:
//               the simulator given the times measured under MPI computes the same F, CV and k
//   following   (2 ranks) results too large for one message follow their request, and the farmer receives them
//               without waiting for the worker that sent them: with farmer computes and prefetch (the worker
//               computes its next chunk meanwhile) rank 0 still computes its share, stored in place, streamed to a
//               sink, and with stragglers (delivered from a buffer once in); each task once, every output right.
//               The tests run without a single-copy transport (PfarmMpiTest.cmake), where a large message moves only
//               while its sender is in MPI: before the fix rank 0 computed 0.20 of the tasks here (0.50 after)
//   side_channel (4 ranks) farm_options::protocol.side_channel: each task on a worker rank sends its index to rank 0
//               on a communicator of the test's own and waits for rank 0's answer (the index + 1) before it ends, so
//               the farm completes only if rank 0 serves the channel while it farms: plain, farmer computes,
//               prefetch, reclaim and the hierarchical supermaster; every task answered once, every output right
#include "mpi_check.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/testing.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <malloc.h>
#include <sys/resource.h>
#include <cstdint>
#include <span>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

double f(double x) { return std::sin(x) * 3.0 + x; }

/// Collective: rank 0 sums every rank's per-task run counts and checks that each task ran exactly once and
/// that the outputs equal the sequential run's. True on rank 0, which holds the report to check further.
bool check_runs(const std::string& label, const std::vector<double>& out, const std::vector<double>& expected,
                const std::vector<int>& runs) {
    const int tasks = static_cast<int>(runs.size());
    std::vector<int> total(runs.size(), 0);
    MPI_Reduce(runs.data(), total.data(), tasks, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank_ != 0) return false;
    int wrong = 0, twice = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        wrong += out[i] != expected[i];
        twice += total[i] != 1;
    }
    CHECK(wrong == 0, "%s: %d outputs differ from the sequential run", label.c_str(), wrong);
    CHECK(twice == 0, "%s: %d tasks did not run exactly once", label.c_str(), twice);
    return true;
}

pfarm::farm_options options_for(const std::string& technique) {
    pfarm::farm_options o;
    o.schedule.technique = technique;
    o.schedule.parameters.chunk = 7;        // css
    o.schedule.parameters.overhead = 0.01;  // fsc
    o.schedule.parameters.sigma = 0.5;
    return o;
}

void techniques() {
    const int tasks = 157;
    std::vector<double> in(tasks), out(tasks), expected(tasks);
    for (int i = 0; i < tasks; ++i) in[static_cast<std::size_t>(i)] = 0.1 * i, expected[static_cast<std::size_t>(i)] = f(0.1 * i);
    std::vector<int> runs(tasks, 0);
    const char* modes[] = {"plain", "farmer-computes", "prefetch", "replicated"};
    for (const auto& t : pfarm::techniques()) {
        for (int mode = 0; mode < 4; ++mode) {
            auto o = options_for(t.name);
            o.topology.farmer_computes = mode == 1;
            o.protocol.prefetch = mode == 2;
            o.protocol.replicated_input = mode == 3;
            std::fill(out.begin(), out.end(), -1.0);
            std::fill(runs.begin(), runs.end(), 0);
            pfarm::farm_report r;
            try {
                r = pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<double>(out),
                                [&](const double& x, double& y) {
                                    const auto i = static_cast<std::size_t>(std::lround(x / 0.1));
                                    ++runs[i];
                                    y = f(x);
                                },
                                o);
            } catch (const std::exception& e) {
                CHECK(false, "%s/%s threw: %s", t.name.c_str(), modes[mode], e.what());
                continue;
            }
            if (!check_runs(t.name + "/" + modes[mode], out, expected, runs)) continue;
            pfarm::task_count sum = 0;
            for (auto n : r.tasks_per_rank) sum += n;
            CHECK(sum == tasks, "%s/%s: the report counts %lld tasks", t.name.c_str(), modes[mode], static_cast<long long>(sum));
            CHECK(mode == 1 || r.tasks_per_rank[0] == 0, "%s: the farmer computed without being asked", t.name.c_str());
        }
    }
}

void failure() {
    std::vector<int> in(100), out(100);
    for (int i = 0; i < 100; ++i) in[static_cast<std::size_t>(i)] = i;
    for (bool prefetch : {false, true})
        for (bool computes : {false, true}) {
            auto o = options_for("ss");
            o.protocol.prefetch = prefetch;
            o.topology.farmer_computes = computes;
            bool caught = false;
            try {
                pfarm::farm(MPI_COMM_WORLD, in, out,
                            [](const int& x, int& y) {
                                if (x == 7) throw std::runtime_error("bad parameter 7");
                                y = 2 * x;
                            },
                            o);
            } catch (const pfarm::worker_error& e) {
                caught = true;
                CHECK(e.task() == 7, "worker_error names task %lld", static_cast<long long>(e.task()));
                CHECK(std::string(e.what()).find("bad parameter 7") != std::string::npos, "message: %s", e.what());
            }
            CHECK(caught, "no worker_error (prefetch %d, farmer computes %d)", prefetch, computes);
        }
}

/// The report's calibration note says when the calibration tasks were too short to measure speeds (the longest
/// under 100 us), and only then: empty tasks (short, unless a rank of this oversubscribed run was preempted in
/// its one calibration task) and 300 us tasks (never short).
void short_calibration() {
    std::vector<double> in(40, 1.0), out(in.size());
    const auto quick = pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x; }, options_for("multi"));
    const auto slow = pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        y = x;
    }, options_for("multi"));
    if (rank_ != 0) return;
    for (const auto* r : {&quick, &slow}) {
        CHECK(r->calibration.has_value(), "multi did not calibrate");
        if (!r->calibration) continue;
        const auto& times = r->calibration->times;
        const bool short_tasks = !times.empty() && *std::max_element(times.begin(), times.end()) < 1e-4;
        const bool noted = r->calibration->note.find("too short") != std::string::npos;
        CHECK(noted == short_tasks, "%s tasks, longest calibration task %.1f us: note '%s'", r == &quick ? "empty" : "300 us",
              times.empty() ? 0.0 : *std::max_element(times.begin(), times.end()) * 1e6, r->calibration->note.c_str());
    }
    CHECK(!slow.calibration || slow.calibration->note.find("too short") == std::string::npos,
          "300 us tasks were noted as too short");
}

void edges() {
    short_calibration();
    std::vector<double> in2{1.0, 2.0}, out2(2);
    for (const char* t : {"gss", "multi", "static", "dtss"}) {
        auto r = pfarm::farm(MPI_COMM_WORLD, in2, out2, [](const double& x, double& y) { y = x + 1; }, options_for(t));
        if (rank_ == 0) CHECK(out2[0] == 2.0 && out2[1] == 3.0, "%s: more workers than tasks", t);
    }
    std::vector<double> none, none_out;
    bool zero = false, unknown = false, ratio = false;
    try {
        pfarm::farm(MPI_COMM_WORLD, none, none_out, [](const double&, double&) {}, options_for("gss"));
    } catch (const pfarm::invalid_argument& e) {
        zero = e.argument() == "in";
    }
    try {
        pfarm::farm(MPI_COMM_WORLD, in2, out2, [](const double&, double&) {}, options_for("nope"));
    } catch (const pfarm::invalid_argument& e) {
        unknown = e.argument() == "technique";
    }
    std::vector<double> out3(3);
    try {
        pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in2), std::span<double>(out3),
                    [](const double&, std::span<double>) {}, options_for("gss"));
    } catch (const pfarm::invalid_argument& e) {
        ratio = e.argument() == "out";
    }
    // farm() names the options by their C++ names (farm_options, technique_options), never a flag.
    bool min_chunk = false, slowdown = false;
    try {
        auto o = options_for("gss");
        o.schedule.parameters.min_chunk = 0;
        pfarm::farm(MPI_COMM_WORLD, in2, out2, [](const double&, double&) {}, o);
    } catch (const pfarm::invalid_argument& e) {
        min_chunk = e.argument() == "min_chunk";
    }
    try {
        auto o = options_for("gss");
        o.emulation = pfarm::testing::emulate({0.5});
        pfarm::farm(MPI_COMM_WORLD, in2, out2, [](const double&, double&) {}, o);
    } catch (const pfarm::invalid_argument& e) {
        slowdown = e.argument() == "slowdown";
    }
    CHECK(min_chunk, "min_chunk 0: no invalid_argument naming 'min_chunk'");
    CHECK(slowdown, "slowdown 0.5: no invalid_argument naming 'slowdown'");
    CHECK(zero, "zero tasks: no invalid_argument naming 'in'");
    CHECK(unknown, "unknown technique: no invalid_argument naming 'technique'");
    CHECK(ratio, "3 outputs for 2 tasks: no invalid_argument naming 'out'");
    // Only rank 0's buffers count: workers pass an empty output (and, with replicated input, their own input).
    std::vector<double> out_rank0_only(rank_ == 0 ? 4 : 0);
    auto replicated = options_for("gss");
    replicated.protocol.replicated_input = true;
    pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in2), std::span<double>(out_rank0_only),
                [](const double& x, std::span<double> y) { y[0] = x, y[1] = x * x; }, replicated);
    if (rank_ == 0)
        CHECK(out_rank0_only == (std::vector<double>{1, 1, 2, 4}), "outputs per task taken from a worker's buffer");
    // Two outputs per task.
    std::vector<double> out4(4);
    pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in2), std::span<double>(out4),
                [](const double& x, std::span<double> y) { y[0] = x, y[1] = -x; }, options_for("ss"));
    if (rank_ == 0) CHECK(out4[0] == 1 && out4[1] == -1 && out4[2] == 2 && out4[3] == -2, "two outputs per task");
}

void slowdown() {
    const int tasks = 240;
    std::vector<int> in(tasks), out(tasks);
    auto o = options_for("multi");
    o.emulation = pfarm::testing::emulate({1, 1, 1, 2, 4});  // rank 0 is the farmer
    const auto r = pfarm::farm(MPI_COMM_WORLD, in, out,
                               [](const int&, int& y) {
                                   std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                   y = 1;
                               },
                               o);
    if (rank_ != 0) return;
    const auto& n = r.tasks_per_rank;
    std::fprintf(stderr, "slowdown 1,1,2,4: tasks %lld %lld %lld %lld, k %.3f\n", static_cast<long long>(n[1]),
                 static_cast<long long>(n[2]), static_cast<long long>(n[3]), static_cast<long long>(n[4]), r.k.value_or(0));
    CHECK(n[4] < n[3] && n[3] < std::min(n[1], n[2]), "task counts not ordered by speed");
}

void single() {
    std::vector<double> in{1, 2, 3}, out(3);
    const auto r = pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x * 10; }, options_for("multi"));
    CHECK(r.sequential, "one rank but the report is not sequential");
    CHECK(out[2] == 30.0, "sequential outputs");
}

void reclaim() {
    const int tasks = 157;
    std::vector<double> in(tasks), out(tasks), expected(tasks);
    for (int i = 0; i < tasks; ++i) in[static_cast<std::size_t>(i)] = 0.1 * i, expected[static_cast<std::size_t>(i)] = f(0.1 * i);
    std::vector<int> runs(tasks, 0);
    // The last third of the loop sleeps 300 us a task and the last rank is 4 times slower: the others run out
    // of tasks while it still holds unstarted ones.
    const auto kernel = [&](const double& x, double& y) {
        const auto i = static_cast<std::size_t>(std::lround(x / 0.1));
        ++runs[i];
        if (i >= 100) std::this_thread::sleep_for(std::chrono::microseconds(300));
        y = f(x);
    };
    pfarm::task_count static_moved[2] = {0, 0};
    // One farm of technique `technique` in `mode` (bit 0: farmer computes, bit 1: prefetch), checked.
    const auto one = [&](const std::string& technique, int mode) {
        const bool computes = mode % 2 == 1, prefetch = mode >= 2;
        const std::string name = technique + "/reclaim" + (computes ? "+farmer-computes" : "") + (prefetch ? "+prefetch" : "");
        auto o = options_for(technique);
        o.protocol.reclaim = true;
        o.topology.farmer_computes = computes;
        o.protocol.prefetch = prefetch;
        o.emulation = pfarm::testing::last_rank_slower(size_, 4.0);
        std::fill(out.begin(), out.end(), -1.0);
        std::fill(runs.begin(), runs.end(), 0);
        pfarm::farm_report r;
        try {
            r = pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<double>(out), kernel, o);
        } catch (const std::exception& e) {
            CHECK(false, "%s threw: %s", name.c_str(), e.what());
            return;
        }
        if (!check_runs(name, out, expected, runs)) return;
        pfarm::task_count sum = 0, chunked = 0;
        for (auto n : r.tasks_per_rank) sum += n;
        for (const auto& sizes : r.chunks_per_rank)
            for (auto n : sizes) chunked += n;
        CHECK(sum == tasks && chunked == tasks, "%s: the report counts %lld tasks, %lld in its chunks",
              name.c_str(), static_cast<long long>(sum), static_cast<long long>(chunked));
        if (technique == "static") static_moved[prefetch] += r.reclaimed_tasks;
    };
    for (const auto& t : pfarm::techniques())
        for (int mode = 0; mode < 4; ++mode) one(t.name, mode);
    // Whether static moved tasks depends on timing (a thief is given tasks only where its estimates promise a gain):
    // on a loaded machine (4 ranks on 2 cores; seen once, with prefetch, while a build ran beside the suite) one farm
    // may move none. Up to 3 more farms of static in that mode then (rank 0's count decides, for every rank).
    for (int prefetch = 0; prefetch < 2; ++prefetch)
        for (int again = 0; again < 3; ++again) {
            MPI_Bcast(&static_moved[prefetch], 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
            if (static_moved[prefetch] > 0) break;
            one("static", 2 * prefetch);
        }
    if (rank_ == 0) {
        std::fprintf(stderr, "reclaim: static moved %lld tasks, %lld with prefetch\n", static_cast<long long>(static_moved[0]),
                     static_cast<long long>(static_moved[1]));
        CHECK(static_moved[0] > 0, "static with a 4x slower rank: no task was taken back");
        CHECK(static_moved[1] > 0, "static with a 4x slower rank and prefetch: no task was taken back");
    }
    // A task that throws, late in the loop, with reclaims under way: worker_error everywhere, nobody hangs.
    for (int mode = 0; mode < 4; ++mode) {
        const bool computes = mode % 2 == 1, prefetch = mode >= 2;
        auto o = options_for("static");
        o.protocol.reclaim = true;
        o.topology.farmer_computes = computes;
        o.protocol.prefetch = prefetch;
        o.emulation = pfarm::testing::last_rank_slower(size_, 4.0);
        bool caught = false;
        try {
            pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<double>(out),
                        [](const double& x, double& y) {
                            const auto i = std::lround(x / 0.1);
                            std::this_thread::sleep_for(std::chrono::microseconds(200));
                            if (i == 150) throw std::runtime_error("bad parameter 150");
                            y = x;
                        },
                        o);
        } catch (const pfarm::worker_error& e) {
            caught = e.task() == 150;
        }
        CHECK(caught, "reclaim: no worker_error naming task 150 (farmer computes %d, prefetch %d)", computes, prefetch);
    }
}

template <std::size_t Align>
struct alignas(Align) aligned_out {
    double value = 0.0;
};

template <std::size_t Align>
void check_alignment(int outputs, bool prefetch, bool computes) {
    using out_t = aligned_out<Align>;
    std::vector<double> in(200);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i);
    std::vector<out_t> out(in.size() * static_cast<std::size_t>(outputs));
    int misaligned = 0, calls = 0;
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    o.protocol.prefetch = prefetch;
    o.topology.farmer_computes = computes;
    pfarm::farm(MPI_COMM_WORLD, in, out,
                [&](const double& x, std::span<out_t> y) {
                    ++calls;
                    for (auto& e : y) {
                        misaligned += reinterpret_cast<std::uintptr_t>(&e) % Align != 0;
                        e.value = x;
                    }
                },
                o);
    int all_misaligned = 0, all_calls = 0;
    MPI_Allreduce(&misaligned, &all_misaligned, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&calls, &all_calls, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all_misaligned == 0, "alignas(%zu), %d outputs, prefetch %d, computes %d: %d elements misaligned", Align,
          outputs, prefetch, computes, all_misaligned);
    CHECK(all_calls == 200, "alignas(%zu): %d calls for 200 tasks", Align, all_calls);
    if (rank_ == 0) {
        int wrong = 0;
        for (std::size_t i = 0; i < out.size(); ++i) wrong += out[i].value != static_cast<double>(i / static_cast<std::size_t>(outputs));
        CHECK(wrong == 0, "alignas(%zu), %d outputs: %d outputs wrong", Align, outputs, wrong);
    }
}

/// Minor page faults of the calling thread so far.
long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt;
}

/// 64 KiB outputs (16 pages): on a worker rank, the first task's writes into pfarm's fresh results buffer fault
/// (almost) no page in (it was measured: 18-23 us instead of 5 us for a 6 KB Mandelbrot column, which made the times-only
/// calibration read two equal ranks as F = 0.8 / 0.2).
void first_touch(bool prefetch) {
    struct page_block {
        std::byte bytes[65536];
    };
    // A fixed mmap threshold: every block this large is fresh memory, never heap pages an earlier farm touched
    // and freed (glibc's threshold otherwise grows as blocks are freed, and the check could pass by luck). It stays
    // set for the rest of this process's scenarios, which only allocate differently for it.
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    std::vector<double> in(24);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i);
    std::vector<page_block> out(rank_ == 0 ? in.size() : 0);
    long first_faults = -1;
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    o.protocol.prefetch = prefetch;
    pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<page_block>(out),
                [&](const double& x, std::span<page_block> y) {  // the span form: y is pfarm's results buffer
                    const long before = minor_faults();
                    std::memset(y[0].bytes, static_cast<int>(x), sizeof y[0].bytes);
                    if (first_faults < 0) first_faults = minor_faults() - before;
                },
                o);
    long worst = rank_ == 0 ? 0 : std::max(first_faults, 0L), all = 0;  // rank 0 writes into the caller's `out`
    MPI_Allreduce(&worst, &all, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    // Without the fix all 16 pages fault in. The check allows a few: one full `ctest -j2` run failed this scenario
    // once, unexplained and not reproduced in ten runs under load, and a fault the kernel adds must not fail it.
    CHECK(all < 8, "first touch, prefetch %d: a worker rank's first task faulted %ld of the 16 pages of its outputs in",
          prefetch, all);
    if (rank_ == 0) {
        int wrong = 0;
        for (std::size_t i = 0; i < out.size(); ++i) wrong += out[i].bytes[65535] != static_cast<std::byte>(i);
        CHECK(wrong == 0, "first touch: %d outputs wrong", wrong);
    }
}

void alignment() {
    for (bool prefetch : {false, true}) first_touch(prefetch);
    for (int outputs : {1, 3})
        for (bool prefetch : {false, true})
            for (bool computes : {false, true}) {
                check_alignment<16>(outputs, prefetch, computes);
                check_alignment<64>(outputs, prefetch, computes);
            }
    // Payloads beyond one message (64 KiB): a static block of 25,000 doubles each way follows its header.
    for (bool prefetch : {false, true}) {
        std::vector<double> big(50000), big_out(big.size()), expected(big.size());
        for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i), expected[i] = f(big[i]);
        std::vector<int> runs(big.size(), 0);
        pfarm::farm_options o;
        o.schedule.technique = prefetch ? "gss" : "static";
        o.protocol.prefetch = prefetch;
        pfarm::farm(MPI_COMM_WORLD, big, big_out, [&](const double& x, double& y) {
            ++runs[static_cast<std::size_t>(x)];
            y = f(x);
        }, o);
        check_runs(std::string("large payloads, ") + o.schedule.technique, big_out, expected, runs);
    }
    std::vector<double> in(50, 1.0), out(50);
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    o.schedule.monitors = {"hwloc", "loadavg"};
    o.output.record_trace = true;
    const auto r = pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = 2 * x; }, o);
    if (rank_ == 0) {
        bool cores = !r.trace.empty();
        for (const auto& c : r.trace) cores = cores && c.sample.cores.has_value();
        CHECK(cores, "monitors hwloc: a chunk's readings have no core count");
    }
    bool unknown = false;
    o.schedule.monitors = {"no-such-monitor"};
    try {
        pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x; }, o);
    } catch (const pfarm::invalid_argument& e) {
        unknown = e.argument() == "monitors";
    }
    CHECK(unknown, "an unknown monitor is not invalid_argument 'monitors'");
}

/// Results of 16 KiB a task, chunks of 16 (256 KiB: they follow their request), 250 us tasks, rank 0 computing and
/// the worker asking ahead: rank 0 computes a fair share whichever way the results are stored.
void following() {
    struct block {
        double v[2048];
    };
    const int tasks = 320;
    std::vector<double> in(tasks);
    for (int i = 0; i < tasks; ++i) in[static_cast<std::size_t>(i)] = static_cast<double>(i);
    const char* modes[] = {"in place", "streamed", "stragglers"};
    for (int mode = 0; mode < 3; ++mode) {
        std::vector<block> out(rank_ == 0 ? in.size() : 0);
        std::vector<int> runs(in.size(), 0), delivered(in.size(), 0);
        pfarm::farm_options o;
        o.schedule.technique = "css";
        o.schedule.parameters.chunk = 16;
        o.protocol.prefetch = true;
        o.topology.farmer_computes = true;
        if (mode == 2) o.protocol.stragglers = 4.0;
        const auto task = [&](const double& x, block& y) {
            ++runs[static_cast<std::size_t>(x)];
            const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(250);
            while (std::chrono::steady_clock::now() < end) {}
            for (double& v : y.v) v = x;
        };
        pfarm::farm_report r;
        if (mode == 1) {
            r = pfarm::farm_stream(MPI_COMM_WORLD, std::span<const double>(in),
                                   [&](const double& x) {
                                       block y;
                                       task(x, y);
                                       return y;
                                   },
                                   [&](pfarm::task_count i, const block& y) {
                                       ++delivered[static_cast<std::size_t>(i)];
                                       out[static_cast<std::size_t>(i)] = y;
                                   },
                                   o);
        } else {
            r = pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<block>(out), task, o);
        }
        std::vector<int> total(in.size(), 0);
        MPI_Reduce(runs.data(), total.data(), tasks, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank_ != 0) continue;
        int wrong = 0, twice = 0, undelivered = 0;
        for (int i = 0; i < tasks; ++i) {
            const auto& b = out[static_cast<std::size_t>(i)];
            wrong += b.v[0] != static_cast<double>(i) || b.v[2047] != static_cast<double>(i);
            twice += mode != 2 && total[static_cast<std::size_t>(i)] != 1;  // stragglers may run a task twice
            undelivered += mode == 1 && delivered[static_cast<std::size_t>(i)] != 1;
        }
        CHECK(wrong == 0, "following, %s: %d outputs wrong", modes[mode], wrong);
        CHECK(twice == 0, "following, %s: %d tasks did not run exactly once", modes[mode], twice);
        CHECK(undelivered == 0, "following, %s: %d tasks not delivered exactly once", modes[mode], undelivered);
        const double share = static_cast<double>(r.tasks_per_rank[0]) / tasks;
        std::fprintf(stderr, "following, %s: rank 0 computed %.2f of the tasks\n", modes[mode], share);
        CHECK(share >= 0.3, "following, %s: rank 0 computed %.2f of the tasks (it waited for the worker's results)",
              modes[mode], share);
    }
}

void side_channel() {
    const int tasks = 120;
    const char* modes[] = {"plain", "farmer computes", "prefetch", "reclaim", "hierarchical"};
    pfarm::mpi::communicator side(MPI_COMM_WORLD);
    constexpr int ask = 1, answer = 2;
    for (int mode = 0; mode < 5; ++mode) {
        pfarm::farm_options o;
        o.schedule.technique = "gss";
        o.topology.farmer_computes = mode == 1;
        o.protocol.prefetch = mode == 2;
        o.protocol.reclaim = mode == 3;
        if (mode == 4) o.topology.farmer = pfarm::farmer_mode::hierarchical, o.topology.masters = 1;
        long served = 0, answered = 0;
        if (rank_ == 0)
            o.protocol.side_channel = [&] {
                int flag = 0;
                MPI_Status status;
                MPI_Iprobe(MPI_ANY_SOURCE, ask, side.get(), &flag, &status);
                if (!flag) return false;
                long v = 0;
                MPI_Recv(&v, 1, MPI_LONG, status.MPI_SOURCE, ask, side.get(), MPI_STATUS_IGNORE);
                ++v;
                MPI_Send(&v, 1, MPI_LONG, status.MPI_SOURCE, answer, side.get());
                ++served;
                return true;
            };
        std::vector<double> in(tasks, 1.0), out(rank_ == 0 ? in.size() : 0);
        const auto task = [&](pfarm::task_count i, const double& x, double& y) {
            y = x + static_cast<double>(i);
            if (rank_ == 0) return;  // rank 0's own tasks: nothing to ask
            long v = static_cast<long>(i), back = -1;
            MPI_Send(&v, 1, MPI_LONG, 0, ask, side.get());
            MPI_Request r;
            MPI_Irecv(&back, 1, MPI_LONG, 0, answer, side.get(), &r);
            int done = 0;
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (!done && std::chrono::steady_clock::now() < until) {
                MPI_Test(&r, &done, MPI_STATUS_IGNORE);
                if (!done) std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
            if (!done) {
                MPI_Cancel(&r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
            CHECK(done, "side_channel, %s: task %ld had no answer within 20 s (rank 0 did not serve the side channel)",
                  modes[mode], v);
            CHECK(!done || back == v + 1, "side_channel, %s: task %ld answered %ld", modes[mode], v, back);
            answered += done;
        };
        const pfarm::farm_report r = pfarm::farm(MPI_COMM_WORLD, in, out, task, o);
        long total = 0;
        MPI_Reduce(&answered, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank_ != 0) continue;
        int wrong = 0;
        for (int i = 0; i < tasks; ++i) wrong += out[static_cast<std::size_t>(i)] != 1.0 + i;
        CHECK(wrong == 0, "side_channel, %s: %d outputs wrong", modes[mode], wrong);
        CHECK(total == tasks - r.tasks_per_rank[0] && served == total,
              "side_channel, %s: %ld tasks answered, %ld served, %ld computed away from rank 0", modes[mode], total, served,
              static_cast<long>(tasks - r.tasks_per_rank[0]));
        std::fprintf(stderr, "side_channel, %s: %ld tasks answered through the side channel while the farm ran\n",
                     modes[mode], total);
    }
}

/// The chunk sizes farmed under MPI (one worker: ranks 0 and 1 of `pair`) and simulated, for `technique` with
/// `o` and an emulated load change to `factor` from the start on the worker (factor 1: emulated dedicated, so
/// that the MPI run reads the emulated run queue, not the machine's).
std::pair<std::vector<pfarm::task_count>, std::vector<pfarm::task_count>> one_worker(MPI_Comm pair, const std::string& technique,
                                                                                     const pfarm::technique_options& o,
                                                                                     double factor) {
    std::vector<double> in(300), out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i);
    pfarm::farm_options fo;
    fo.schedule.technique = technique;
    fo.schedule.parameters = o;
    fo.emulation = pfarm::testing::emulate({}, {{1, 0.0, factor}});
    const auto r = pfarm::farm(pair, in, out, [](const double& x, double& y) { y = f(x); }, fo);
    pfarm::sim::platform pl;
    pl.task_times = {1.0};
    pl.load_changes = {{0, 0.0, factor}};
    pfarm::sim::workload wl;
    wl.tasks = 300;
    const auto s = pfarm::sim::simulate(pl, wl, technique, o);
    // One chunk count in both drivers: every chunk handed out, the calibration chunk included.
    return {r.chunks_per_rank.size() > 1 ? r.chunks_per_rank[1].to_vector() : std::vector<pfarm::task_count>{},
            s.workers[0].chunks.to_vector()};
}

void drivers() {
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ < 2 ? 0 : MPI_UNDEFINED, rank_, &pair);
    if (pair != MPI_COMM_NULL) {
        pfarm::technique_options weights;
        weights.weights = {1.0};
        const auto [loaded_mpi, loaded_sim] = one_worker(pair, "dtss", weights, 3.0);
        const auto [plain_mpi, plain_sim] = one_worker(pair, "dtss", weights, 1.0);
        if (rank_ == 0) {
            CHECK(loaded_mpi == loaded_sim, "dtss with run queue 3: %zu chunks under MPI, %zu simulated, or sizes differ",
                  loaded_mpi.size(), loaded_sim.size());
            CHECK(plain_mpi == plain_sim, "dtss dedicated: %zu chunks under MPI, %zu simulated, or sizes differ",
                  plain_mpi.size(), plain_sim.size());
            CHECK(loaded_mpi != plain_mpi, "dtss: the run queue changed nothing (its readings are not used)");
        }
        const auto [dgss_mpi, dgss_sim] = one_worker(pair, "dgss", {}, 1.0);
        if (rank_ == 0) {
            CHECK(!dgss_mpi.empty() && dgss_mpi.front() == 1 && dgss_mpi == dgss_sim,
                  "dgss without weights: not calibrated alike under MPI and simulated (%zu and %zu chunks)", dgss_mpi.size(),
                  dgss_sim.size());
        }
        MPI_Comm_free(&pair);
    }
    // Calibration on workers of different speeds: ranks 1 and 2 emulated 1 and 3 times slower, 8 ms tasks. The
    // simulator is given the times the farm measured, so F, CV and k must agree to rounding: a comparison with the
    // nominal times 1 and 3 failed on a loaded CI machine (a sleep that overshoots by 10 ms on the slow rank is
    // paid three times by the emulation: k 2.441 under MPI against 1.921 for times 1 and 3). That the emulation
    // acted is checked apart, loosely: the slow rank's time at least 1.5 times the other's (about 1 without it).
    for (const char* technique : {"multi", "dgss"}) {
        std::vector<double> in(40), out(in.size());
        pfarm::farm_options fo;
        fo.schedule.technique = technique;
        fo.emulation = pfarm::testing::emulate({1.0, 1.0, 3.0});
        const auto r = pfarm::farm(MPI_COMM_WORLD, in, out, [](const double&, double& y) {
            std::this_thread::sleep_for(std::chrono::milliseconds(8));
            y = 1.0;
        }, fo);
        if (rank_ != 0) continue;
        CHECK(r.calibration.has_value() && r.calibration->times.size() == 2, "%s: not calibrated on 2 workers under MPI",
              technique);
        if (!r.calibration || r.calibration->times.size() != 2) continue;
        const auto& times = r.calibration->times;
        CHECK(times[0] > 0.0 && times[1] >= 1.5 * times[0], "%s: calibration times %.4f s and %.4f s: the emulated slowdown 3 did not act",
              technique, times[0], times[1]);
        pfarm::sim::platform pl;
        pl.task_times = times;
        pfarm::sim::workload wl;
        wl.tasks = 40;
        const auto s = pfarm::sim::simulate(pl, wl, technique, {});
        CHECK(s.calibration.has_value(), "%s: not calibrated in the simulator", technique);
        if (!s.calibration) continue;
        CHECK(r.calibration->mode == s.calibration->mode, "%s: calibration modes differ", technique);
        const auto close = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); };
        for (std::size_t j = 0; j < 2; ++j)
            CHECK(close(r.calibration->fitness[j], s.calibration->fitness[j]), "%s: F[%zu] is %.6f under MPI, %.6f simulated",
                  technique, j, r.calibration->fitness[j], s.calibration->fitness[j]);
        CHECK(close(r.calibration->stats.cv, s.calibration->stats.cv), "%s: CV is %.6f under MPI, %.6f simulated", technique,
              r.calibration->stats.cv, s.calibration->stats.cv);
        CHECK(close(r.calibration->k, s.calibration->k), "%s: k is %.6f under MPI, %.6f simulated", technique, r.calibration->k,
              s.calibration->k);
    }
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string scenario = argc > 1 ? argv[1] : "";
    if (scenario == "techniques") techniques();
    else if (scenario == "failure") failure();
    else if (scenario == "edges") edges();
    else if (scenario == "slowdown") slowdown();
    else if (scenario == "single") single();
    else if (scenario == "reclaim") reclaim();
    else if (scenario == "alignment") alignment();
    else if (scenario == "drivers") drivers();
    else if (scenario == "following") following();
    else if (scenario == "side_channel") side_channel();
    else {
        std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
        return 2;
    }
    return verdict(scenario);
}
