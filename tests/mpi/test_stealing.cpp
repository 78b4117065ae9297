// The work-stealing farm (farm_options::topology.farmer = stealing) under mpiexec. One scenario per run, named by
// argv[1]:
//   results  ss, css (chunk 3), gss and gss with min_chunk 3 x victims random and tree x replicated input or not x a
//            slow rank (rank 0, whose range the others must steal, or the last rank), with uneven task times: each
//            task runs exactly once (counted where it ran, summed), the outputs equal a sequential run's, in order;
//            every rank's chunks sum to its tasks and all of them to the tasks; the trace covers [0, tasks) once; with
//            rank 0 four times slower the others steal (steals > 0, each a read first: attempts >= steals); with
//            on_task_error skip a failing task's output is the fill and the farm goes on
//   errors   what the mode cannot honour, the same invalid_argument on every rank naming the argument: techniques
//            other than ss, css and gss (fss, auto, multi, awf-b), prefetch, reclaim, stragglers, on_worker_loss,
//            monitors, on_task_error retry; victims tree with another farmer
//   failure  a task that throws ends the farm with worker_error naming it on every rank, nobody hangs, and the next
//            farm on the same communicator runs whole
//   single   one rank: the tasks run in order, the results right
#include "mpi_check.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/testing.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

double f(double x) { return std::sin(x) * 3.0 + x; }

/// Busy for `seconds` (a task's compute: emulated slowdown scales it).
void spin(double seconds) {
    const double until = MPI_Wtime() + seconds;
    while (MPI_Wtime() < until) {
    }
}

struct variant {
    std::string technique;
    pfarm::technique_options parameters;
    std::string label;
};

std::vector<variant> served() {
    pfarm::technique_options css, min3;
    css.chunk = 3;
    min3.min_chunk = 3;
    return {{"ss", {}, "ss"}, {"css", css, "css(3)"}, {"gss", {}, "gss"}, {"gss", min3, "gss(min 3)"}};
}

void results() {
    const int tasks = 240;
    std::vector<double> full(tasks), expected(tasks);
    for (int i = 0; i < tasks; ++i) full[static_cast<std::size_t>(i)] = 0.1 * i, expected[static_cast<std::size_t>(i)] = f(0.1 * i);
    long long stolen_from_slow_root = 0;
    for (const variant& v : served())
        for (const pfarm::victim_rule victims : {pfarm::victim_rule::random, pfarm::victim_rule::tree})
            for (const bool replicated : {false, true})
                for (const int slow : {0, size_ - 1}) {
                    const std::string label = v.label + " " + pfarm::to_string(victims) + (replicated ? " replicated" : "") +
                                              " slow rank " + std::to_string(slow);
                    const std::vector<double> in = replicated || rank_ == 0 ? full : std::vector<double>{};
                    std::vector<double> out(rank_ == 0 ? tasks : 0, -1.0);
                    std::vector<int> runs(tasks, 0);
                    pfarm::farm_options o;
                    o.schedule.technique = v.technique;
                    o.schedule.parameters = v.parameters;
                    o.topology.farmer = pfarm::farmer_mode::stealing;
                    o.topology.victims = victims;
                    o.protocol.replicated_input = replicated;
                    o.output.record_trace = true;
                    std::vector<double> slowdown(static_cast<std::size_t>(size_), 1.0);
                    slowdown[static_cast<std::size_t>(slow)] = 4.0;
                    o.emulation = pfarm::testing::emulate(slowdown);
                    pfarm::farm_report r;
                    try {
                        r = pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<double>(out),
                                        [&](const double& x, double& y) {
                                            const auto i = static_cast<std::size_t>(std::lround(x * 10.0));
                                            ++runs[i];
                                            spin(20e-6 * static_cast<double>(1 + i % 7));  // uneven task times
                                            y = f(x);
                                        },
                                        o);
                    } catch (const std::exception& e) {
                        CHECK(false, "%s: threw %s", label.c_str(), e.what());
                        continue;
                    }
                    std::vector<int> total(tasks, 0);
                    MPI_Reduce(runs.data(), total.data(), tasks, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
                    const auto mine = r.chunks_per_rank[static_cast<std::size_t>(rank_)];
                    const long long claimed = std::accumulate(mine.begin(), mine.end(), 0LL);
                    const long long ran = std::accumulate(runs.begin(), runs.end(), 0LL);
                    CHECK(claimed == ran, "%s: rank %d ran %lld tasks, its report says %lld", label.c_str(), rank_, ran, claimed);
                    if (rank_ != 0) continue;
                    int wrong = 0, twice = 0;
                    for (int i = 0; i < tasks; ++i) {
                        wrong += out[static_cast<std::size_t>(i)] != expected[static_cast<std::size_t>(i)];
                        twice += total[static_cast<std::size_t>(i)] != 1;
                    }
                    CHECK(wrong == 0, "%s: %d outputs differ from the sequential run", label.c_str(), wrong);
                    CHECK(twice == 0, "%s: %d tasks did not run exactly once", label.c_str(), twice);
                    long long sum = 0, steals = 0;
                    std::size_t chunks = 0;
                    for (int q = 0; q < size_; ++q) {
                        const auto at = static_cast<std::size_t>(q);
                        long long of_rank = 0;
                        for (auto c : r.chunks_per_rank[at]) of_rank += c, ++chunks;
                        CHECK(of_rank == r.tasks_per_rank[at], "%s: rank %d's chunks sum to %lld", label.c_str(), q, of_rank);
                        CHECK(r.steal_attempts_per_rank[at] >= r.steals_per_rank[at], "%s: rank %d: %lld steals, %lld attempts",
                              label.c_str(), q, static_cast<long long>(r.steals_per_rank[at]),
                              static_cast<long long>(r.steal_attempts_per_rank[at]));
                        sum += of_rank;
                        steals += r.steals_per_rank[at];
                    }
                    CHECK(sum == tasks, "%s: the chunks sum to %lld", label.c_str(), sum);
                    CHECK(r.workers == size_, "%s: %d workers", label.c_str(), r.workers);
                    if (victims == pfarm::victim_rule::tree)  // the root never steals
                        CHECK(r.steal_attempts_per_rank[0] == 0, "%s: the root tried to steal", label.c_str());
                    if (slow == 0) stolen_from_slow_root += steals;
                    CHECK(r.trace.size() == chunks, "%s: %zu trace records for %zu chunks", label.c_str(), r.trace.size(), chunks);
                    pfarm::task_count next = 0;
                    for (const auto& c : r.trace) {
                        CHECK(c.first == next && c.count > 0, "%s: trace record at %lld, expected %lld", label.c_str(),
                              static_cast<long long>(c.first), static_cast<long long>(next));
                        next = c.first + c.count;
                    }
                    CHECK(r.makespan > 0.0, "%s: makespan %g", label.c_str(), r.makespan);
                }
    // With rank 0 four times slower, its children take part of its range: over the 16 runs at least one steal each.
    if (rank_ == 0) CHECK(stolen_from_slow_root >= 16, "%lld steals from a slow rank 0 in 16 runs", stolen_from_slow_root);

    // on_task_error skip: task 17's output is the fill, the others right, the failure listed once.
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    o.topology.farmer = pfarm::farmer_mode::stealing;
    o.protocol.on_task_error = {pfarm::task_error_rule::kind::skip, 1};
    std::vector<double> out(rank_ == 0 ? tasks : 0, -1.0);
    const std::vector<double> in = rank_ == 0 ? full : std::vector<double>{};
    const pfarm::farm_report r = pfarm::farm(MPI_COMM_WORLD, std::span<const double>(in), std::span<double>(out),
                                             [](const double& x, double& y) {
                                                 if (std::lround(x * 10.0) == 17) throw std::runtime_error("task 17");
                                                 y = f(x);
                                             },
                                             o);
    if (rank_ == 0) {
        int wrong = 0;
        for (int i = 0; i < tasks; ++i) wrong += out[static_cast<std::size_t>(i)] != (i == 17 ? 0.0 : expected[static_cast<std::size_t>(i)]);
        CHECK(wrong == 0, "skip: %d outputs wrong", wrong);
        CHECK(r.failed_tasks.size() == 1 && r.failed_tasks[0].task == 17, "skip: %zu failed tasks listed", r.failed_tasks.size());
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
        CHECK(right, "%s: argument '%s', expected '%s' (%s)", label.c_str(), e.argument().c_str(), argument.c_str(), e.what());
        if (rank_ == 0) std::printf("%s: %s\n", label.c_str(), e.what());
    }
    int all = 0;
    MPI_Allreduce(&right, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all == size_, "%s: %d of %d ranks threw invalid_argument '%s'", label.c_str(), all, size_, argument.c_str());
}

void errors() {
    pfarm::farm_options o;
    o.topology.farmer = pfarm::farmer_mode::stealing;
    for (const char* name : {"fss", "auto", "multi", "awf-b", "static"}) {
        o.schedule.technique = name;
        expect_invalid(name, o, "technique");
    }
    o.schedule.technique = "gss";
    o.protocol.prefetch = true;
    expect_invalid("prefetch", o, "prefetch");
    o.protocol.prefetch = false;
    o.protocol.reclaim = true;
    expect_invalid("reclaim", o, "reclaim");
    o.protocol.reclaim = false;
    o.protocol.stragglers = 2.0;
    expect_invalid("stragglers", o, "stragglers");
    o.protocol.stragglers = 0.0;
    o.protocol.on_worker_loss = pfarm::worker_loss_rule{pfarm::worker_loss_rule::kind::stop};
    expect_invalid("on_worker_loss", o, "on_worker_loss");
    o.protocol.on_worker_loss.reset();
    o.protocol.on_task_error = {pfarm::task_error_rule::kind::retry, 3};
    expect_invalid("on_task_error retry", o, "on_task_error");
    o.protocol.on_task_error = {};
    o.schedule.monitors = {"loadavg"};
    expect_invalid("monitors", o, "monitors");
    o.schedule.monitors.clear();
    o.topology.farmer = pfarm::farmer_mode::decentralised;
    o.topology.victims = pfarm::victim_rule::tree;
    expect_invalid("victims with decentralised", o, "victims");
}

void failure() {
    const int tasks = 300, bad = 37;
    std::vector<double> in(rank_ == 0 ? tasks : 0), out(in.size());
    for (int i = 0; i < static_cast<int>(in.size()); ++i) in[static_cast<std::size_t>(i)] = i;
    for (const pfarm::victim_rule victims : {pfarm::victim_rule::random, pfarm::victim_rule::tree})
        for (const char* technique : {"ss", "gss"}) {
            pfarm::farm_options o;
            o.schedule.technique = technique;
            o.topology.farmer = pfarm::farmer_mode::stealing;
            o.topology.victims = victims;
            int right = 0;
            try {
                pfarm::farm(MPI_COMM_WORLD, in, out,
                            [](const double& x, double& y) {
                                if (static_cast<int>(x) == bad) throw std::runtime_error("bad input 37");
                                spin(20e-6);
                                y = x;
                            },
                            o);
                CHECK(false, "%s: no error", technique);
            } catch (const pfarm::worker_error& e) {
                right = e.task() == bad && e.message() == "bad input 37";
                CHECK(right, "%s: task %lld, message '%s'", technique, static_cast<long long>(e.task()), e.message().c_str());
            }
            int all = 0;
            MPI_Allreduce(&right, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            CHECK(all == size_, "%s: %d of %d ranks got worker_error for task 37", technique, all, size_);
        }
    // The communicator is still usable: a farm after the failures runs whole.
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    o.topology.farmer = pfarm::farmer_mode::stealing;
    pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = 2 * x; }, o);
    if (rank_ == 0)
        for (int i = 0; i < tasks; ++i) CHECK(out[static_cast<std::size_t>(i)] == 2.0 * i, "after the failures: task %d", i);
}

void single() {
    const int tasks = 50;
    std::vector<double> in(tasks), out(tasks, -1.0);
    std::iota(in.begin(), in.end(), 0.0);
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    o.topology.farmer = pfarm::farmer_mode::stealing;
    o.topology.victims = pfarm::victim_rule::tree;
    const pfarm::farm_report r = pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = f(x); }, o);
    CHECK(r.sequential, "one rank: not sequential");
    for (int i = 0; i < tasks; ++i) CHECK(out[static_cast<std::size_t>(i)] == f(i), "one rank: task %d", i);
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string scenario = argc > 1 ? argv[1] : "";
    if (scenario == "results") results();
    else if (scenario == "errors") errors();
    else if (scenario == "failure") failure();
    else if (scenario == "single") single();
    else {
        if (rank_ == 0) std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
        return 2;
    }
    return verdict(scenario);
}
