// Task errors without stopping the farm (farm_options::protocol.on_task_error, docs/reliability.md "Task errors")
// under mpiexec. Flaky tasks: every tenth index (i % 10 == 3) fails on its first run anywhere and succeeds after (a
// marker file per task in a directory of rank 0's, shared by the ranks of this machine, says whether it ran before).
// One scenario per run, named by argv[1]; `mode` (argv[2]) is flat, hierarchical or decentralised:
//   retry    retry=3: every output right, the farm never stopped, each flaky task failed once and ran again once;
//            with fss, ss, multi, prefetch, reclaim, rank 0 computing, stragglers on with the last rank slowed 8x (flat),
//            fixed-size and any-size results;
//            a task that always fails stops the farm at its last attempt with worker_error naming it on every rank
//            (decentralised: fixed-size results only; rank 0 hands the failed tasks out again at the end)
//   skip     every run lists exactly the flaky indices in farm_report::failed_tasks (with stragglers on, some of
//            them: a flaky task's other copy may succeed and win), with the text and a rank that computes; their
//            outputs are the fill (Out{} of a type with default member values; an empty result)
//            and every other output is right; with a journal, the skipped tasks are journaled as failed and a rerun
//            computes them (flat only)
#include "mpi_check.hpp"

#include "pfarm/farm.hpp"
#include "pfarm/journal.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/testing.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr pfarm::task_count tasks = 200;
bool flaky(pfarm::task_count i) { return i % 10 == 3; }
std::vector<pfarm::task_count> flaky_tasks() {
    std::vector<pfarm::task_count> v;
    for (pfarm::task_count i = 0; i < tasks; ++i)
        if (flaky(i)) v.push_back(i);
    return v;
}

double g(pfarm::task_count i) { return std::sqrt(static_cast<double>(i)) + 0.25 * static_cast<double>(i); }

/// A value with default member values: its fill (value-initialised) is {-7, 3}, not zero bytes.
struct cell {
    double v = -7.0;
    int tag = 3;
};

/// A fresh marker directory of rank 0's, on every rank.
std::string markers() {
    std::string dir;
    if (rank_ == 0) {
        char name[] = "/tmp/pfarm-taskerr-XXXXXX";
        if (!mkdtemp(name)) throw std::runtime_error("mkdtemp failed");
        dir = name;
    }
    int n = static_cast<int>(dir.size());
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    dir.resize(static_cast<std::size_t>(n));
    MPI_Bcast(dir.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD);
    return dir;
}

void remove_markers(const std::string& dir) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) std::filesystem::remove_all(dir);
}

/// Throws on task i's first run (any rank) when it is flaky.
void maybe_fail(const std::string& dir, pfarm::task_count i) {
    if (!flaky(i)) return;
    const std::string path = dir + "/" + std::to_string(i);
    const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd >= 0) {
        close(fd);
        throw std::runtime_error("flaky task " + std::to_string(i));
    }
}

pfarm::farm_options options_for(const std::string& mode, const std::string& rule) {
    pfarm::farm_options o;
    o.topology.farmer = pfarm::parse_farmer_mode(mode);
    o.schedule.technique = mode == "decentralised" ? "gss" : "fss";
    o.protocol.on_task_error = pfarm::parse_task_error_rule(rule);
    return o;
}

struct variant {
    std::string label;
    pfarm::farm_options options;
};

std::vector<variant> variants(const std::string& mode, const std::string& rule) {
    std::vector<variant> v;
    v.push_back({"plain", options_for(mode, rule)});
    v.push_back({"ss", options_for(mode, rule)});
    v.back().options.schedule.technique = "ss";
    if (mode != "decentralised") {
        v.push_back({"prefetch", options_for(mode, rule)});
        v.back().options.protocol.prefetch = true;
        v.push_back({"reclaim", options_for(mode, rule)});
        v.back().options.protocol.reclaim = true;
        v.push_back({"multi", options_for(mode, rule)});
        v.back().options.schedule.technique = "multi";
    }
    if (mode == "flat") {  // a chunk may be re-executed too: a task delivered by its other copy is not run again
        v.push_back({"stragglers", options_for(mode, rule)});
        v.back().options.protocol.stragglers = 1.5;
        std::vector<double> slowdown(static_cast<std::size_t>(size_), 1.0);
        slowdown.back() = 8.0;  // the last rank
        v.back().options.emulation = pfarm::testing::emulate(slowdown);
    }
    v.push_back({"computes", options_for(mode, rule)});
    v.back().options.topology.farmer_computes = true;
    return v;
}

void retry(const std::string& mode) {
    for (const variant& v : variants(mode, "retry=3")) {
        // Fixed-size results into rank 0's array.
        std::string dir = markers();
        std::vector<double> out(static_cast<std::size_t>(tasks), -1.0);
        pfarm::farm_report r;
        try {
            r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<double>(out),
                            [&dir](pfarm::task_count i, double& y) {
                                maybe_fail(dir, i);
                                y = g(i);
                            },
                            v.options);
        } catch (const std::exception& e) {
            CHECK(false, "%s: the farm stopped: %s", v.label.c_str(), e.what());
        }
        remove_markers(dir);
        if (rank_ == 0) {
            for (pfarm::task_count i = 0; i < tasks; ++i)
                CHECK(out[static_cast<std::size_t>(i)] == g(i), "%s: out[%lld] = %g", v.label.c_str(),
                      static_cast<long long>(i), out[static_cast<std::size_t>(i)]);
            const auto expected = static_cast<pfarm::task_count>(flaky_tasks().size());
            CHECK(r.task_errors == expected, "%s: %lld task errors, expected %lld", v.label.c_str(),
                  static_cast<long long>(r.task_errors), static_cast<long long>(expected));
            // (stragglers: a failed task delivered by its other copy first runs no more)
            CHECK(r.retried_tasks == expected || (v.label == "stragglers" && r.retried_tasks <= expected), "%s: %lld retried",
                  v.label.c_str(), static_cast<long long>(r.retried_tasks));
            CHECK(r.failed_tasks.empty(), "%s: %zu listed failed", v.label.c_str(), r.failed_tasks.size());
        }
        if (mode == "decentralised") continue;  // results of any size: not in this mode
        // Results of any size, streamed.
        dir = markers();
        std::vector<std::vector<int>> vout;
        try {
            pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, vout,
                        [&dir](pfarm::task_count i) {
                            maybe_fail(dir, i);
                            return std::vector<int>(static_cast<std::size_t>(i % 5 + 1), static_cast<int>(i));
                        },
                        v.options);
        } catch (const std::exception& e) {
            CHECK(false, "%s (any size): the farm stopped: %s", v.label.c_str(), e.what());
        }
        remove_markers(dir);
        if (rank_ == 0) {
            CHECK(vout.size() == static_cast<std::size_t>(tasks), "%s: %zu results", v.label.c_str(), vout.size());
            for (std::size_t i = 0; i < vout.size(); ++i)
                CHECK(vout[i] == std::vector<int>(i % 5 + 1, static_cast<int>(i)), "%s: result %zu", v.label.c_str(), i);
        }
    }
    // A task that always fails: the farm stops at its third run, naming it and its last error, on every rank.
    const std::string dir = markers();
    std::vector<double> out(static_cast<std::size_t>(tasks));
    try {
        pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<double>(out),
                    [&dir](pfarm::task_count i, double& y) {
                        if (i == 57) {
                            int run = 1;  // which run of it this is: a marker file per run
                            while (open((dir + "/57-" + std::to_string(run)).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600) < 0) ++run;
                            throw std::runtime_error("always, run " + std::to_string(run));
                        }
                        y = g(i);
                    },
                    options_for(mode, "retry=3"));
        CHECK(false, "a task that always fails did not stop the farm");
    } catch (const pfarm::worker_error& e) {
        CHECK(e.task() == 57, "task %lld", static_cast<long long>(e.task()));
        CHECK(e.message() == "always, run 3", "message '%s'", e.message().c_str());
    }
    remove_markers(dir);
}

/// The listed tasks: exactly the flaky ones, or (`exact` false: stragglers, where a flaky task's other copy may run
/// after its failure and win) some of them; each with its text and a rank. Returns whether task i is listed.
std::vector<bool> check_listed(const std::string& label, const pfarm::farm_report& r, bool exact = true,
                               pfarm::task_count base = 0) {
    const std::vector<pfarm::task_count> expected = flaky_tasks();
    std::vector<bool> listed(static_cast<std::size_t>(tasks), false);
    if (exact)
        CHECK(r.failed_tasks.size() == expected.size(), "%s: %zu listed, expected %zu", label.c_str(), r.failed_tasks.size(),
              expected.size());
    for (std::size_t k = 0; k < r.failed_tasks.size(); ++k) {
        const pfarm::failed_task& f = r.failed_tasks[k];
        const pfarm::task_count i = f.task - base;
        CHECK(i >= 0 && i < tasks && flaky(i) && (k == 0 || f.task > r.failed_tasks[k - 1].task), "%s: listed %lld",
              label.c_str(), static_cast<long long>(f.task));
        if (exact && k < expected.size())
            CHECK(i == expected[k], "%s: listed %lld, expected %lld", label.c_str(), static_cast<long long>(f.task),
                  static_cast<long long>(expected[k] + base));
        CHECK(f.error == "flaky task " + std::to_string(i), "%s: text '%s'", label.c_str(), f.error.c_str());
        CHECK(f.rank >= 0 && f.rank < size_, "%s: rank %d", label.c_str(), f.rank);
        if (i >= 0 && i < tasks) listed[static_cast<std::size_t>(i)] = true;
    }
    if (exact)
        CHECK(r.task_errors == static_cast<pfarm::task_count>(expected.size()), "%s: %lld task errors", label.c_str(),
              static_cast<long long>(r.task_errors));
    return listed;
}

void skip(const std::string& mode) {
    for (const variant& v : variants(mode, "skip")) {
        std::string dir = markers();
        std::vector<cell> out(static_cast<std::size_t>(tasks), cell{-1.0, -1});
        pfarm::farm_report r;
        try {
            r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<cell>(out),
                            [&dir](pfarm::task_count i, cell& y) {
                                y = {-2.0, -2};  // written before it throws: the fill replaces it
                                maybe_fail(dir, i);
                                y = {g(i), static_cast<int>(i)};
                            },
                            v.options);
        } catch (const std::exception& e) {
            CHECK(false, "%s: the farm stopped: %s", v.label.c_str(), e.what());
        }
        remove_markers(dir);
        const bool exact = v.label != "stragglers";
        if (rank_ == 0) {
            const std::vector<bool> listed = check_listed(v.label, r, exact);
            for (pfarm::task_count i = 0; i < tasks; ++i) {
                const cell& c = out[static_cast<std::size_t>(i)];
                if (listed[static_cast<std::size_t>(i)])
                    CHECK(c.v == -7.0 && c.tag == 3, "%s: fill of %lld is {%g, %d}", v.label.c_str(),
                          static_cast<long long>(i), c.v, c.tag);
                else CHECK(c.v == g(i) && c.tag == i, "%s: out[%lld]", v.label.c_str(), static_cast<long long>(i));
            }
        }
        if (mode == "decentralised") continue;  // results of any size: not in this mode
        dir = markers();
        std::vector<std::vector<int>> vout;
        pfarm::farm_report rv;
        try {
            rv = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{100, 100 + tasks}, vout,
                             [&dir](pfarm::task_count i) {
                                 maybe_fail(dir, i - 100);
                                 return std::vector<int>(static_cast<std::size_t>(i % 5 + 1), static_cast<int>(i));
                             },
                             v.options);
        } catch (const std::exception& e) {
            CHECK(false, "%s (any size): the farm stopped: %s", v.label.c_str(), e.what());
        }
        remove_markers(dir);
        if (rank_ == 0) {
            // An index range's failed tasks are listed by their index in it.
            const std::vector<bool> listed = check_listed(v.label + " (any size)", rv, exact, 100);
            for (std::size_t i = 0; i < vout.size(); ++i) {
                const auto t = static_cast<pfarm::task_count>(i) + 100;
                const std::vector<int> want = listed[i] ? std::vector<int>{}
                                                        : std::vector<int>(static_cast<std::size_t>(t % 5 + 1), static_cast<int>(t));
                CHECK(vout[i] == want, "%s (any size): result %zu has %zu values", v.label.c_str(), i, vout[i].size());
            }
        }
    }
    if (mode != "flat") return;
    // With a journal: the skipped tasks are journaled as failed; a rerun computes them (they no longer fail).
    std::string dir = markers();
    const std::string journal = dir + "-journal";
    pfarm::farm_options o = options_for(mode, "skip");
    o.resume.journal = journal;
    std::vector<double> out(static_cast<std::size_t>(tasks), -1.0);
    const auto fn = [&dir](pfarm::task_count i, double& y) {
        maybe_fail(dir, i);
        y = g(i);
    };
    pfarm::farm_report first = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<double>(out), fn, o);
    if (rank_ == 0) check_listed("journal", first);
    pfarm::farm_report second = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<double>(out), fn, o);
    if (rank_ == 0) {
        CHECK(second.journaled == tasks - static_cast<pfarm::task_count>(flaky_tasks().size()), "journaled %lld",
              static_cast<long long>(second.journaled));
        CHECK(second.failed_tasks.empty(), "rerun: %zu failed", second.failed_tasks.size());
        for (pfarm::task_count i = 0; i < tasks; ++i)
            CHECK(out[static_cast<std::size_t>(i)] == g(i), "rerun: out[%lld]", static_cast<long long>(i));
        std::filesystem::remove(journal);
    }
    remove_markers(dir);
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string scenario = argc > 1 ? argv[1] : "";
    const std::string mode = argc > 2 ? argv[2] : "flat";
    try {
        if (scenario == "retry") retry(mode);
        else if (scenario == "skip") skip(mode);
        else {
            std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        CHECK(false, "%s %s: %s", scenario.c_str(), mode.c_str(), e.what());
    }
    return verdict(scenario + " " + mode);
}
