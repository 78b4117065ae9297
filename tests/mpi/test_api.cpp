// The farm's shapes beyond an input array (docs/using-pfarm.md) under mpiexec (through pfarm_mpi_test). One
// scenario per run, named by argv[1]:
//   range      farm over an index range: every technique with prefetch + reclaim and in one more of {plain,
//              farmer computes, prefetch, reclaim} (all five for a few), each task exactly once, out[i] from index
//              first + i, a range starting beyond 2^31; the input-array farm passes the index too; an empty or
//              reversed range is invalid_argument "range" on every rank
//   variable   results of any size (0 bytes to 1 MiB per task) collected in task order and streamed to a callback
//              on rank 0 (each task exactly once, only on rank 0, contents right), every technique with a mode
//              as above; fixed-size values streamed; a callback that throws stops the farm on every rank
//   schedule   a schedule that learns: the first call calibrates, the second starts from what was learned (no
//              calibration tasks), a worker slowed down during the second call gets a smaller share in the third
//   single     one rank: ranges, variable and streamed results run in order on it
//   journal    a farm with a journal stopped by a failing task resumes: no journaled task runs again, every
//              output right; results of any size, streamed, with replicated input, farmer computes, prefetch and
//              reclaim resume from a complete journal computing nothing; another workload's journal is refused
//   journal-die / journal-resume  (tests/mpi/dead_rank.sh) rank 2 kills itself with SIGKILL mid-run: the job
//              ends non-zero; the rerun resumes from the journal and checks every output
#include "mpi_check.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/testing.hpp"

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* mode_names[] = {"plain", "farmer-computes", "prefetch", "reclaim", "prefetch+reclaim"};

pfarm::farm_options options_for(const std::string& technique, int mode) {
    pfarm::farm_options o;
    o.schedule.technique = technique;
    o.schedule.parameters.chunk = 7;        // css
    o.schedule.parameters.overhead = 0.01;  // fsc
    o.schedule.parameters.sigma = 0.5;
    o.topology.farmer_computes = mode == 1;
    o.protocol.prefetch = mode == 2 || mode == 4;
    o.protocol.reclaim = mode == 3 || mode == 4;
    return o;
}

/// The modes a technique runs in: all five for a few; for the others prefetch + reclaim and one more (by its
/// position).
std::vector<int> modes_of(const std::string& name, std::size_t position) {
    if (name == "ss" || name == "gss" || name == "multi" || name == "awf-b") return {0, 1, 2, 3, 4};
    if (position % 5 == 4) return {4};
    return {static_cast<int>(position % 5), 4};
}

/// Collective: every task ran exactly once over all ranks (runs counted where they ran).
int count_twice(const std::vector<int>& runs) {
    std::vector<int> total(runs.size(), 0);
    MPI_Reduce(runs.data(), total.data(), static_cast<int>(runs.size()), MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    int twice = 0;
    for (int t : total) twice += t != 1;
    return rank_ == 0 ? twice : 0;
}

double g(pfarm::task_count index) { return static_cast<double>(index % 1000) * 0.5 + static_cast<double>(index / 1000); }

void range() {
    const pfarm::task_count tasks = 123;
    std::size_t position = 0;
    for (const auto& t : pfarm::techniques()) {
        for (int mode : modes_of(t.name, position++)) {
            for (pfarm::task_count first : {pfarm::task_count{0}, pfarm::task_count{5'000'000'000}}) {
                const std::string label = t.name + "/" + mode_names[mode] + "/first " + std::to_string(first);
                std::vector<double> out(static_cast<std::size_t>(tasks), -1.0);
                std::vector<int> runs(static_cast<std::size_t>(tasks), 0);
                try {
                    pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{first, first + tasks}, out,
                                [&](pfarm::task_count i, double& y) {
                                    ++runs[static_cast<std::size_t>(i - first)];
                                    y = g(i);
                                },
                                options_for(t.name, mode));
                } catch (const std::exception& e) {
                    CHECK(false, "%s threw: %s", label.c_str(), e.what());
                    continue;
                }
                CHECK(count_twice(runs) == 0, "%s: tasks not run exactly once", label.c_str());
                if (rank_ == 0)
                    for (pfarm::task_count i = 0; i < tasks; ++i)
                        if (out[static_cast<std::size_t>(i)] != g(first + i)) {
                            CHECK(false, "%s: out[%lld] = %g", label.c_str(), static_cast<long long>(i), out[static_cast<std::size_t>(i)]);
                            break;
                        }
            }
        }
    }
    // Several outputs per task from the index.
    std::vector<std::int64_t> out3(3 * 50);
    pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{10, 60}, out3, [](pfarm::task_count i, std::span<std::int64_t> y) {
        for (std::size_t j = 0; j < y.size(); ++j) y[j] = i * 10 + static_cast<std::int64_t>(j);
    });
    if (rank_ == 0)
        for (std::size_t k = 0; k < out3.size(); ++k)
            CHECK(out3[k] == static_cast<std::int64_t>((10 + k / 3) * 10 + k % 3), "three outputs: out[%zu] = %lld", k,
                  static_cast<long long>(out3[k]));
    // The input-array farm passes the index too.
    std::vector<double> in(40), out(40);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = 2.0 * static_cast<double>(i);
    pfarm::farm(MPI_COMM_WORLD, in, out, [](pfarm::task_count i, const double& x, double& y) { y = x + static_cast<double>(i); },
                {.schedule = {.technique = "gss"}, .protocol = {.prefetch = true}});
    if (rank_ == 0)
        for (std::size_t i = 0; i < in.size(); ++i) CHECK(out[i] == 3.0 * static_cast<double>(i), "index form: out[%zu] = %g", i, out[i]);
    // Bad ranges: invalid_argument "range" everywhere.
    for (pfarm::index_range bad : {pfarm::index_range{5, 5}, pfarm::index_range{9, 3}}) {
        std::string argument;
        try {
            pfarm::farm(MPI_COMM_WORLD, bad, out, [](pfarm::task_count, double& y) { y = 0; });
        } catch (const pfarm::invalid_argument& e) {
            argument = e.argument();
        }
        CHECK(argument == "range", "range [%lld, %lld): argument '%s'", static_cast<long long>(bad.first),
              static_cast<long long>(bad.last), argument.c_str());
    }
}

/// Task i's result of any size: from 0 bytes to 1 MiB (a few tasks), elements derived from i.
std::vector<std::uint32_t> result_of(pfarm::task_count i) {
    std::size_t n = static_cast<std::size_t>((i * 37) % 23);  // 0..22 elements
    if (i % 41 == 7) n = (1u << 20) / sizeof(std::uint32_t);  // 1 MiB
    if (i % 10 == 3) n = 0;
    std::vector<std::uint32_t> r(n);
    for (std::size_t j = 0; j < n; ++j) r[j] = static_cast<std::uint32_t>(i * 1000003 + static_cast<pfarm::task_count>(j));
    return r;
}

bool same(pfarm::task_count i, std::span<const std::uint32_t> r) {
    const auto e = result_of(i);
    return r.size() == e.size() && std::equal(r.begin(), r.end(), e.begin());
}

void variable() {
    const pfarm::task_count tasks = 90;
    std::size_t position = 0;
    for (const auto& t : pfarm::techniques()) {
        for (int mode : modes_of(t.name, position++)) {
            const std::string label = t.name + "/" + mode_names[mode];
            auto o = options_for(t.name, mode);
            std::vector<int> runs(static_cast<std::size_t>(tasks), 0);
            // Collected in task order.
            std::vector<std::vector<std::uint32_t>> out;
            try {
                pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out,
                            [&](pfarm::task_count i) {
                                ++runs[static_cast<std::size_t>(i)];
                                return result_of(i);
                            },
                            o);
            } catch (const std::exception& e) {
                CHECK(false, "%s collected threw: %s", label.c_str(), e.what());
                continue;
            }
            CHECK(count_twice(runs) == 0, "%s collected: tasks not run exactly once", label.c_str());
            if (rank_ == 0) {
                CHECK(out.size() == static_cast<std::size_t>(tasks), "%s: %zu results", label.c_str(), out.size());
                for (pfarm::task_count i = 0; i < tasks && static_cast<std::size_t>(i) < out.size(); ++i)
                    if (!same(i, out[static_cast<std::size_t>(i)])) {
                        CHECK(false, "%s: result %lld has %zu elements or wrong contents", label.c_str(),
                              static_cast<long long>(i), out[static_cast<std::size_t>(i)].size());
                        break;
                    }
            }
            // Streamed from an input array: each task delivered once, on rank 0 only.
            std::vector<double> in(static_cast<std::size_t>(tasks));
            std::iota(in.begin(), in.end(), 0.0);
            std::vector<int> delivered(static_cast<std::size_t>(tasks), 0);
            int wrong = 0;
            pfarm::farm_stream(
                MPI_COMM_WORLD, in, [](pfarm::task_count i, const double& x) { return result_of(static_cast<pfarm::task_count>(x) + 0 * i); },
                [&](pfarm::task_count i, std::span<const std::uint32_t> r) {
                    ++delivered[static_cast<std::size_t>(i)];
                    wrong += !same(i, r) || reinterpret_cast<std::uintptr_t>(r.data()) % alignof(std::uint32_t) != 0;
                },
                o);
            int calls = 0;
            for (int d : delivered) calls += d;
            if (rank_ == 0) {
                CHECK(wrong == 0, "%s streamed: %d wrong results", label.c_str(), wrong);
                for (int d : delivered)
                    if (d != 1) {
                        CHECK(false, "%s streamed: a task delivered %d times", label.c_str(), d);
                        break;
                    }
            } else {
                CHECK(calls == 0, "%s streamed: %d callbacks on a worker rank", label.c_str(), calls);
            }
        }
    }
    // Fixed-size values streamed, and a throwing callback stops the farm everywhere.
    double sum = 0.0;
    int calls = 0;
    pfarm::farm_stream(MPI_COMM_WORLD, pfarm::index_range{1, 101}, [](pfarm::task_count i) { return static_cast<double>(i); },
                       [&](pfarm::task_count i, const double& v) {
                           sum += v, ++calls;
                           CHECK(v == static_cast<double>(i), "value");
                       },
                       {.schedule = {.technique = "fss"}, .topology = {.farmer_computes = true}});
    if (rank_ == 0) CHECK(sum == 5050.0 && calls == 100, "streamed values: sum %g over %d calls", sum, calls);
    bool stopped = false;
    try {
        pfarm::farm_stream(MPI_COMM_WORLD, pfarm::index_range{0, 50}, [](pfarm::task_count i) { return i; },
                           [](pfarm::task_count i, const pfarm::task_count&) {
                               if (i == 20) throw std::runtime_error("disk full");
                           });
    } catch (const pfarm::error& e) {
        stopped = std::string(e.what()).find("disk full") != std::string::npos;
    }
    CHECK(stopped, "a throwing callback did not stop the farm with its message");
}

void schedule() {
    // 3 workers, 240 tasks of ~1 ms: multi calibrates on the first call only.
    const pfarm::task_count tasks = 240;
    pfarm::schedule learned;
    auto run = [&](std::vector<pfarm::load_change> changes) {
        pfarm::farm_options o{.schedule = {.technique = "multi", .learned = &learned}};
        o.emulation = pfarm::testing::emulate({}, std::move(changes));
        std::vector<double> out(static_cast<std::size_t>(tasks));
        return pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out, [](pfarm::task_count, double& y) {
            std::this_thread::sleep_for(std::chrono::microseconds(1000));
            y = 1.0;
        }, o);
    };
    const auto first = run({});
    const auto second = run({{size_ - 1, 0.0, 4.0}});  // the last rank computes 4 times slower throughout
    const std::vector<double> after_second = learned.seconds_per_task();
    const auto third = run({});
    if (rank_ != 0) return;
    CHECK(first.calibration && !first.learned, "the first call did not calibrate");
    CHECK(second.learned && second.calibration, "the second call did not start from what was learned");
    CHECK(learned.calibrated_calls() == 1 && learned.learned_calls() == 2, "calls: %d calibrated, %d learned",
          learned.calibrated_calls(), learned.learned_calls());
    // A learned call runs no calibration task: multi's first chunks are F_w x its first installment, not 1 each.
    const auto slow = static_cast<std::size_t>(size_ - 1);
    for (std::size_t r = 1; r <= slow; ++r)
        CHECK(second.chunks_per_rank[r].empty() || second.chunks_per_rank[r].front() > 1,
              "rank %zu's first chunk in the learned call was %lld task(s)", r, static_cast<long long>(second.chunks_per_rank[r].front()));
    // The worker slowed during call 2 is learned as slower, and starts call 3 with a smaller first chunk (multi
    // adapts within call 3 once it is fast again, so its total may catch up).
    CHECK(after_second.size() == slow && after_second.back() > 2.0 * after_second.front(),
          "learned times per task after call 2: %zu workers, last %g, first %g", after_second.size(),
          after_second.empty() ? 0.0 : after_second.back(), after_second.empty() ? 0.0 : after_second.front());
    const double fast_first = static_cast<double>(third.chunks_per_rank[1].front());
    const double slow_first = static_cast<double>(third.chunks_per_rank[slow].front());
    std::printf("schedule: call 3 first chunks %g (fast) %g (slowed in call 2); learned s/task after call 2:", fast_first, slow_first);
    for (double x : after_second) std::printf(" %.5f", x);
    std::printf("\n");
    CHECK(slow_first < 0.6 * fast_first, "the worker slowed in call 2 starts call 3 with %g tasks, a fast one with %g",
          slow_first, fast_first);
}

void single() {
    std::vector<double> out(10);
    pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{100, 110}, out, [](pfarm::task_count i, double& y) { y = static_cast<double>(i); });
    for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == 100.0 + static_cast<double>(i), "single range");
    std::vector<std::vector<std::uint32_t>> results;
    pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 50}, results, [](pfarm::task_count i) { return result_of(i); });
    for (pfarm::task_count i = 0; i < 50; ++i) CHECK(same(i, results[static_cast<std::size_t>(i)]), "single variable %lld", static_cast<long long>(i));
}

std::string journal_path(const std::string& name) {
    std::string path = "pfarm-test-journal-" + name;
    if (rank_ == 0) std::remove(path.c_str());
    MPI_Barrier(MPI_COMM_WORLD);
    return path;
}

void journal() {
    const pfarm::task_count tasks = 200;
    const std::string path = journal_path("fixed");
    std::vector<double> out(static_cast<std::size_t>(tasks), -1.0);
    std::vector<int> first_runs(static_cast<std::size_t>(tasks), 0), second_runs(static_cast<std::size_t>(tasks), 0);
    bool failed = false;
    try {
        pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out, [&](pfarm::task_count i, double& y) {
            ++first_runs[static_cast<std::size_t>(i)];
            std::this_thread::sleep_for(std::chrono::microseconds(300));
            if (i == 150) throw std::runtime_error("node lost");
            y = g(i);
        }, {.schedule = {.technique = "ss"}, .resume = {.journal = path}});
    } catch (const pfarm::worker_error&) {
        failed = true;
    }
    CHECK(failed, "the first run did not fail");
    std::fill(out.begin(), out.end(), -1.0);
    const auto r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out, [&](pfarm::task_count i, double& y) {
        ++second_runs[static_cast<std::size_t>(i)];
        y = g(i);
    }, {.schedule = {.technique = "gss"}, .protocol = {.prefetch = true}, .resume = {.journal = path}});
    std::vector<int> total(second_runs.size());
    MPI_Reduce(second_runs.data(), total.data(), static_cast<int>(tasks), MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank_ == 0) {
        int computed = 0, wrong = 0;
        for (pfarm::task_count i = 0; i < tasks; ++i) {
            computed += total[static_cast<std::size_t>(i)];
            wrong += out[static_cast<std::size_t>(i)] != g(i) || total[static_cast<std::size_t>(i)] > 1;
        }
        std::printf("journal: %lld restored, %d computed on resume\n", static_cast<long long>(r.journaled), computed);
        CHECK(r.journaled > 0 && r.journaled < tasks, "%lld tasks restored", static_cast<long long>(r.journaled));
        CHECK(computed == tasks - r.journaled, "%d computed on resume for %lld restored", computed, static_cast<long long>(r.journaled));
        CHECK(wrong == 0, "%d outputs wrong or computed twice on resume", wrong);
    }
    // Results of any size, streamed, every engine mode: a complete journal restores them all and computes none.
    std::vector<double> in(static_cast<std::size_t>(tasks));
    std::iota(in.begin(), in.end(), 0.0);
    for (int mode = 0; mode < 5; ++mode) {
        auto o = options_for("gss", mode);
        o.protocol.replicated_input = mode == 2;
        o.resume.journal = journal_path("variable-" + std::to_string(mode));
        for (int pass = 0; pass < 2; ++pass) {
            std::vector<int> delivered(static_cast<std::size_t>(tasks), 0);
            int wrong = 0, computed = 0;
            const auto rr = pfarm::farm_stream(
                MPI_COMM_WORLD, in,
                [&](const double& x) {
                    ++computed;
                    return result_of(static_cast<pfarm::task_count>(x));
                },
                [&](pfarm::task_count i, std::span<const std::uint32_t> v) {
                    ++delivered[static_cast<std::size_t>(i)];
                    wrong += !same(i, v);
                },
                o);
            int all = 0;
            MPI_Reduce(&computed, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank_ != 0) continue;
            int twice = 0;
            for (int d : delivered) twice += d != 1;
            CHECK(wrong == 0 && twice == 0, "journal %s pass %d: %d wrong, %d not delivered once", mode_names[mode], pass, wrong, twice);
            CHECK(all == (pass == 0 ? tasks : 0) && rr.journaled == (pass == 0 ? 0 : tasks),
                  "journal %s pass %d: %d computed, %lld restored", mode_names[mode], pass, all, static_cast<long long>(rr.journaled));
        }
    }
    // Another workload (another range start) is refused, on every rank.
    std::string argument;
    try {
        pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{1, tasks + 1}, out, [](pfarm::task_count i, double& y) { y = g(i); },
                    {.resume = {.journal = path}});
    } catch (const pfarm::invalid_argument& e) {
        argument = e.argument();
    }
    CHECK(argument == "journal", "another workload's journal: argument '%s'", argument.c_str());
}

/// tests/mpi/dead_rank.sh: rank 2 dies (SIGKILL) at task 120 of a journaled farm; the rerun resumes.
void journal_dies(bool die) {
    const pfarm::task_count tasks = 300;
    std::vector<double> out(static_cast<std::size_t>(tasks), -1.0);
    const auto r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out, [die](pfarm::task_count i, double& y) {
        std::this_thread::sleep_for(std::chrono::microseconds(2000));
        if (die && i >= 120 && rank_ == 2) std::raise(SIGKILL);
        y = g(i);
    }, {.schedule = {.technique = "ss"}, .resume = {.journal = "pfarm-test-journal-dead-rank"}});
    if (rank_ != 0) return;
    int wrong = 0;
    for (pfarm::task_count i = 0; i < tasks; ++i) wrong += out[static_cast<std::size_t>(i)] != g(i);
    std::printf("journal-resume: %lld restored, %d wrong\n", static_cast<long long>(r.journaled), wrong);
    CHECK(wrong == 0 && r.journaled > 0, "resumed after a dead rank: %d wrong, %lld restored", wrong, static_cast<long long>(r.journaled));
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string scenario = argc > 1 ? argv[1] : "";
    if (scenario == "range") range();
    else if (scenario == "variable") variable();
    else if (scenario == "schedule") schedule();
    else if (scenario == "single") single();
    else if (scenario == "journal") journal();
    else if (scenario == "journal-die") journal_dies(true);
    else if (scenario == "journal-resume") journal_dies(false);
    else {
        std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
        return 2;
    }
    return verdict(scenario);
}
