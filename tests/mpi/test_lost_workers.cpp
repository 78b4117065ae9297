// A lost worker (farm_options::protocol.on_worker_loss, docs/reliability.md "A lost worker") under mpiexec with Open
// MPI's recovery mode (OMPI_MCA_orte_enable_recovery=1 in the environment: the other ranks go on when one dies). Rank
// `victim` (argv[2], default 2) kills itself with SIGKILL in the middle of its 4th task, holding a chunk; every other
// rank checks, and the verdict goes point to point (no collective can include the dead rank). One scenario per run,
// named by argv[1]:
//   continue   every output right on rank 0, lost_ranks == {victim} on every living rank; with fss, then the variant
//              argv[3]: plain (the rule left unset: recovery mode gives continue, slack 5 s), and with continue=0.5
//              prefetch, reclaim, computes (rank 0 computes too), stragglers, big (results of 80 KiB a task: they
//              follow their request), ss, journal (resume.journal: the journal then names the lost rank, and holds
//              every output); midsend and midsend-reclaim: ss with results of 8 KiB a task (each request
//              above MPI's eager size), the victim dying in the middle of sending its 3rd: its MPI_Send (interposed
//              below through MPI's profiling interface) starts the send and dies, so rank 0 matches a message whose
//              body never comes; inputs: 4 KiB of inputs a task (replies above the eager size; a large chunk's inputs
//              follow their reply); asked: the same inputs, the victim dying right after sending its 3rd request, so
//              that rank 0 answers a dead rank with a reply above the eager size (a blocking send would wait for ever)
//              hierarchical-V: the variant V (hierarchical alone: plain) with the hierarchical farm, 2 masters (6
//              ranks: groups {1, 2, 3} and {4, 5}), the victim a worker of a group, presumed lost by its master;
//              hierarchical-master-V: the victim is master 1, SIGKILLed by rank 2 (a worker of its group) in rank 2's
//              4th task, presumed lost by rank 0, its chunks computed by the other group, its group's living workers
//              told the outcome by rank 0 (V: plain, prefetch; computes: the masters compute, and master 1 dies in
//              its own 4th task; worker: rank 2 dies too; journal); decentralised-V: the variant V (decentralised
//              alone: plain; prefetch, computes, inputs, ss) with the decentralised farm, the victim a claimer that rank
//              0's watch presumes lost, its tasks computed by the others at the end; hierarchical-group: ranks 1, 2 and 3, master 1's whole
//              group, are killed; lost_ranks == {1}, then the workers killed with it (-worker: {1, 2}; -group:
//              {1, 2, 3}: rank 0 names the workers of a lost master that do not answer it) on every living rank
//   stop       stop=0.5: every living rank throws pfarm::error naming the victim's rank and "presumed lost" (argv[3]:
//              a variant as above, hierarchical included)
//   abort      continue=2, and rank 0's sink throws at the 150th result, after the victim died and before it is
//              presumed lost: the farm aborts, waits for the dead victim no longer than its deadline, and every living
//              rank throws pfarm::error with the sink's text
//   late       continue=0.3 and the victim stalls 1.5 s in its 4th task instead of dying: presumed lost, its tasks
//              computed by the others, then it comes back; every output exactly right and the farm ends on every rank
#include "messages.hpp"
#include "mpi_check.hpp"

#include "pfarm/farm.hpp"
#include "pfarm/journal.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/testing.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr pfarm::task_count tasks = 240;
int victim = 2;
int computed = 0;  // tasks this rank has started
bool die_in_send = false;  // midsend: the victim dies in its 3rd MPI_Send of a request with results
bool die_after_ask = false;  // asked: the victim dies once its 3rd request is sent
int requests_with_results = 0, requests = 0;
int killer = 2;            // the rank whose 4th task kills (the victim, or a worker of a master that dies)
std::vector<int> killed;   // the ranks it kills, itself last (default: {victim})
std::vector<int> pids;     // per rank of MPI_COMM_WORLD: its process

}  // namespace

/// The profiling interface's MPI_Send: midsend's victim starts its 3rd request with results (above the eager size)
/// and dies before it is complete; asked's victim dies once its 3rd request is sent; every other send is MPI's.
extern "C" int MPI_Send(const void* buffer, int count, MPI_Datatype type, int to, int tag, MPI_Comm comm) {
    if (die_after_ask && rank_ == victim && tag == pfarm::detail::tag_request && ++requests == 3) {
        PMPI_Send(buffer, count, type, to, tag, comm);
        raise(SIGKILL);
    }
    if (die_in_send && rank_ == victim && tag == pfarm::detail::tag_request && type == MPI_BYTE && count > 4096 &&
        ++requests_with_results == 3) {
        MPI_Request started;
        PMPI_Isend(buffer, count, type, to, tag, comm, &started);
        raise(SIGKILL);
    }
    return PMPI_Send(buffer, count, type, to, tag, comm);
}

namespace {

double g(pfarm::task_count i) { return std::sqrt(static_cast<double>(i)) + 0.25 * static_cast<double>(i); }

void spin(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
    }
}

bool is_killed(int rank) { return std::find(killed.begin(), killed.end(), rank) != killed.end(); }

/// A task of about 2 ms; in its 4th the killer kills the others it kills, then dies itself if it is one of them (or
/// stalls, `late`).
void work(pfarm::task_count, bool late) {
    if (rank_ == killer && !die_in_send && !die_after_ask && ++computed == 4) {
        if (late) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        } else {
            for (int r : killed)
                if (r != rank_) kill(static_cast<pid_t>(pids[static_cast<std::size_t>(r)]), SIGKILL);
            if (is_killed(rank_)) raise(SIGKILL);
        }
    }
    spin(0.002);
}

/// The verdict without a collective: each living rank sends its failed checks to rank 0, which prints it.
int verdict_p2p(const std::string& scenario) {
    constexpr int tag = 4242;
    if (rank_ != 0) {
        MPI_Send(&failures_, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
        return failures_ == 0 ? 0 : 1;
    }
    int total = failures_;
    for (int r = 1; r < size_; ++r) {
        if (is_killed(r) && scenario.rfind("late", 0) != 0) continue;  // dead
        int theirs = 0;
        MPI_Recv(&theirs, 1, MPI_INT, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        total += theirs;
    }
    std::printf("%s: %s (%d failed checks)\n", scenario.c_str(), total == 0 ? "ok" : "FAILED", total);
    return total == 0 ? 0 : 1;
}

/// The variant without its farmer and its victim: hierarchical-prefetch and hierarchical-master-prefetch are prefetch,
/// hierarchical, hierarchical-master and hierarchical-group are plain, hierarchical-master-worker is worker.
std::string base_of(const std::string& variant) {
    if (variant.starts_with("decentralised")) return variant.size() > 14 ? variant.substr(14) : "plain";
    if (!variant.starts_with("hierarchical")) return variant;
    std::string v = variant.size() > 13 ? variant.substr(13) : "plain";
    if (v == "master" || v == "group") return "plain";
    if (v.starts_with("master-")) v = v.substr(7);
    return v;
}

/// A master's loss: the variant kills master 1 (hierarchical-master-*, hierarchical-group).
bool master_lost(const std::string& variant) {
    return variant.starts_with("hierarchical-master") || variant == "hierarchical-group";
}

pfarm::farm_options options_for(const std::string& full) {
    pfarm::farm_options o;
    if (full.starts_with("hierarchical")) {  // 2 masters; the victim a worker rank of a group
        o.topology.farmer = pfarm::farmer_mode::hierarchical;
        o.topology.masters = 2;
    }
    if (full.starts_with("decentralised")) o.topology.farmer = pfarm::farmer_mode::decentralised;
    const std::string variant = base_of(full);
    o.schedule.technique = variant == "ss" || variant.starts_with("midsend") ? "ss" : "fss";
    o.protocol.prefetch = variant == "prefetch";
    o.protocol.reclaim = variant == "reclaim" || variant == "midsend-reclaim";
    o.topology.farmer_computes = variant == "computes";
    if (variant == "stragglers") o.protocol.stragglers = 3.0;
    return o;
}

void check_outputs(const std::vector<double>& out, const std::string& label) {
    if (rank_ != 0) return;
    int wrong = 0;
    for (pfarm::task_count i = 0; i < tasks; ++i)
        if (out[static_cast<std::size_t>(i)] != g(i)) ++wrong;
    CHECK(wrong == 0, "%s: %d outputs wrong", label.c_str(), wrong);
}

/// The journal of a farm that lost `victim`: every output, and a record naming the rank (its fingerprint read from
/// its header: pfarm/journal.hpp gives the format).
void check_journal(const std::string& path) {
    std::uint64_t fingerprint = 0;
    {
        std::ifstream in(path, std::ios::binary);
        char header[16] = {};
        in.read(header, sizeof header);
        std::memcpy(&fingerprint, header + 8, sizeof fingerprint);
    }
    const pfarm::journal_contents j = pfarm::read_journal(path, fingerprint, tasks);
    CHECK(j.outputs.size() == static_cast<std::size_t>(tasks), "journal: %zu outputs", j.outputs.size());
    CHECK(j.lost.size() == 1 && j.lost[0].first == victim, "journal: %zu lost ranks recorded (first %d), expected {%d}",
          j.lost.size(), j.lost.empty() ? -1 : j.lost[0].first, victim);
    CHECK(!j.lost.empty() && j.lost[0].second.find("presumed lost") != std::string::npos, "journal: its note '%s'",
          j.lost.empty() ? "" : j.lost[0].second.c_str());
    std::remove(path.c_str());
}

void run_continue(const std::string& full, bool late) {
    pfarm::farm_options o = options_for(full);
    const std::string variant = base_of(full);
    if (late) o.protocol.on_worker_loss = pfarm::parse_worker_loss_rule("continue=0.3");
    else if (variant == "plain" && full != "hierarchical-group") o.protocol.on_worker_loss.reset();  // recovery mode: continue=5
    else o.protocol.on_worker_loss = pfarm::parse_worker_loss_rule("continue=0.5");
    pfarm::farm_report r;
    die_in_send = variant.starts_with("midsend");
    die_after_ask = variant == "asked";
    if (variant == "big" || die_in_send) {  // big: 80 KiB of results a task, a chunk's results follow their request
        const std::size_t n = die_in_send ? 1024 : 10240;
        std::vector<std::vector<double>> big;
        r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, big, [&](pfarm::task_count i) {
            work(i, late);
            return std::vector<double>(n, g(i));
        }, o);
        if (rank_ == 0) {
            int wrong = 0;
            for (pfarm::task_count i = 0; i < tasks; ++i) {
                const auto& v = big[static_cast<std::size_t>(i)];
                if (v.size() != n || v.front() != g(i) || v.back() != g(i)) ++wrong;
            }
            CHECK(wrong == 0, "%s: %d outputs wrong", variant.c_str(), wrong);
        }
    } else if (variant == "inputs" || variant == "asked") {
        std::vector<std::array<double, 512>> in(rank_ == 0 ? tasks : 0);
        for (pfarm::task_count i = 0; i < static_cast<pfarm::task_count>(in.size()); ++i) {
            in[static_cast<std::size_t>(i)].fill(0.0);
            in[static_cast<std::size_t>(i)].front() = in[static_cast<std::size_t>(i)].back() = g(i);
        }
        std::vector<double> out(tasks, -1.0);
        r = pfarm::farm(MPI_COMM_WORLD, in, std::span<double>(out),
                        [&](pfarm::task_count i, const std::array<double, 512>& x, double& y) {
                            work(i, late);
                            y = (x.front() + x.back()) / 2;
                        }, o);
        check_outputs(out, variant);
    } else {
        std::vector<double> out(tasks, -1.0);
        const std::string journal = "/tmp/pfarm-test-lost-journal-" + std::to_string(getpid());
        if (variant == "journal") o.resume.journal = journal;  // read on rank 0 only: its pid names the file
        r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<double>(out), [&](pfarm::task_count i, double& y) {
            work(i, late);
            y = g(i);
        }, o);
        check_outputs(out, variant);
        if (variant == "journal" && rank_ == 0) check_journal(journal);
    }
    // The victim, then (a lost master) the workers of its group killed with it, which rank 0 finds silent.
    std::vector<int> expected{victim};
    for (int k : killed)
        if (k != victim) expected.push_back(k);
    std::sort(expected.begin() + 1, expected.end());
    CHECK(r.lost_ranks == expected, "%s: lost ranks %zu (first %d, last %d), expected %zu from %d", variant.c_str(),
          r.lost_ranks.size(), r.lost_ranks.empty() ? -1 : r.lost_ranks[0],
          r.lost_ranks.empty() ? -1 : r.lost_ranks.back(), expected.size(), victim);
    if (rank_ == 0 && !master_lost(full)) {  // (a lost master's group has no entries: its part never came)
        pfarm::task_count total = 0;
        for (auto t : r.tasks_per_rank) total += t;
        CHECK(total >= tasks, "%s: %lld tasks counted", variant.c_str(), static_cast<long long>(total));
    }
}

void run_stop(const std::string& variant) {
    pfarm::farm_options o = options_for(variant);
    o.protocol.on_worker_loss = pfarm::parse_worker_loss_rule("stop=0.5");
    std::vector<double> out(tasks, -1.0);
    try {
        pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<double>(out), [&](pfarm::task_count, double& y) {
            work(0, false);
            y = 1.0;
        }, o);
        CHECK(false, "stop: the farm completed");
    } catch (const pfarm::error& e) {
        const std::string what = e.what();
        CHECK(what.find("rank " + std::to_string(victim)) != std::string::npos, "stop: '%s' names no rank %d",
              what.c_str(), victim);
        CHECK(what.find("presumed lost") != std::string::npos, "stop: '%s'", what.c_str());
    }
}

void run_abort() {
    pfarm::farm_options o = options_for("plain");
    o.protocol.on_worker_loss = pfarm::parse_worker_loss_rule("continue=2");
    int delivered = 0;
    try {
        pfarm::farm_stream(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, [](pfarm::task_count i) {
            work(i, false);
            return std::vector<double>{g(i)};
        }, [&](pfarm::task_count, std::span<const double>) {
            if (++delivered == 150) throw std::runtime_error("sink refused");
        }, o);
        CHECK(false, "abort: the farm completed");
    } catch (const pfarm::error& e) {
        const std::string what = e.what();
        CHECK(what.find("sink refused") != std::string::npos, "abort: '%s'", what.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string scenario = argc > 1 ? argv[1] : "continue";
    if (argc > 2) victim = std::stoi(argv[2]);
    const std::string variant = argc > 3 ? argv[3] : "plain";
    pids.resize(static_cast<std::size_t>(size_));
    const int pid = static_cast<int>(getpid());
    MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
    killer = victim;
    killed = {victim};
    if (master_lost(variant)) {  // master 1 (victim) is killed by rank 2, a worker of its group, unless it computes
        killer = variant == "hierarchical-master-computes" ? victim : 2;
        if (variant == "hierarchical-master-worker") killed = {victim, 2};
        if (variant == "hierarchical-group") killed = {victim, 3, 2};
    }
    if (scenario == "continue") run_continue(variant, false);
    else if (scenario == "late") run_continue(variant, true);
    else if (scenario == "stop") run_stop(variant);
    else if (scenario == "abort") run_abort();
    else {
        if (rank_ == 0) std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
        return 2;
    }
    return verdict_p2p(scenario + " " + variant);
}
