// pfarm-bench-overhead: the farmer's overhead per chunk against raw MPI (docs/benchmarks.md, section 2): the
// farmer's round trip for an empty task beside a raw MPI ping-pong measured in the same run; the ratio is the
// number to report, because absolute times on shared machines are noise.
//
//   mpiexec -n 2 pfarm-bench-overhead [--tasks N] [--repetitions R] [--rate-tasks M] [--claim-tasks C]
//                                     [--output FILE] [--check] [--verbose] [--profile]
// --verbose prints every repetition: gap percentiles, trimmed mean, mean, and the largest gaps with the chunk
// they ended (a spike at chunk 1024, 2048, 4096 is a vector of the farm growing).
// --profile runs only (a), (a') and (b) (for perf or valgrind --tool=callgrind) and prints no JSON.
//
// In one run, interleaved repetition by repetition in a rotating order (timed with MPI_Wtime):
//   (a) raw MPI ping-pong between ranks 1 and 0 of messages of exactly the farm's sizes: a request (the
//       request header plus one task's result) from the worker, received by rank 0 from MPI_ANY_SOURCE (a
//       farmer does not know who asks), and a reply (the reply header plus one task's input);
//   (a') the same, received as the farm with reclaim receives: a receive posted ahead into a 64 KiB buffer,
//       MPI_Wait, MPI_Get_count, the receive posted again (skeleton/mpi/src/messages.hpp; without reclaim the
//       farm receives with one MPI_Recv, as (a) does);
//   (a'') the same as (a), and rank 1 reads the farm's clock twice per round trip, as a farm's worker does to time
//       its chunk (after the reply, before the request): the floor of any farm that times its chunks, and so
//       the share of the 1.25 target that is left for the farm's decisions and messages;
//   (b) pfarm::farm over ranks 0 and 1 (the flat farmer, one worker), technique ss (chunk size 1), N empty
//       tasks (double -> double); the arrival times of the requests are stamped on rank 0 when its receive of
//       one completes (the profiling wrappers of MPI_Recv, MPI_Wait and MPI_Waitany, tag 1), as (a) stamps its
//       receives;
//   (c) the same with prefetch, and with farmer_computes (for reference: rank 0 computes too, so it is a
//       time per chunk over two computing ranks, not a round trip). The hierarchical farmer is not measured
//       here: it needs 3 ranks at least, and a worker's round trip is then to its master (a farmer session
//       in pool mode), which this one-worker measurement would not tell apart from (b) (docs/hierarchical.md has
//       its request counts); it is reported as "not measured";
//   then, with every rank asking at once, the farmer's maximum request rate (requests served per second,
//   empty tasks, chunk 1: requests / elapsed) beside the rate of a raw MPI server loop on rank 0;
//   (d) the decentralised farm's claim rate (farmer = decentralised, ss, every rank computing, replicated input,
//       empty tasks: one claim per task) beside a raw loop of MPI_Fetch_and_op + MPI_Win_flush on a counter on
//       rank 0 by every rank, interleaved: claims per second over all ranks, from the first claim to the last
//       (both stamped by a profiling wrapper of MPI_Fetch_and_op, so both are timed alike); target 0.8; the
//       claim path alone: the raw loop turning each claimed step into its chunk with the core's step_schedule;
//       the claim path with the farm's chores by hand (the task called through std::function, its result
//       staged, two clock reads for the busy time); the raw loop's claims in a row by one rank, on which its
//       rate counts; and rank 0's share of each loop's fetch-and-ops (the window is on rank 0: which one-sided
//       component Open MPI picks decides whether its ops are local, docs/skeleton.md "Claim rate").
// It also prints where the farm's clock reads from (the TSC where the CPU allows it, else CLOCK_MONOTONIC;
// skeleton/mpi/src/clock.hpp) and what one read of it and one MPI_Wtime call cost on rank 0 (a farm's worker reads
// the clock twice per chunk; docs/performance.md).
// Three statistics per measurement, from the gaps between consecutive requests arriving at rank 0 (with one
// worker, each gap is one per-chunk round trip): the median gap (blind to a cost paid every few chunks), the
// trimmed mean (the mean of the gaps up to the 99th percentile: it counts such costs, a page fault as a vector
// grows, but drops the few gaps in which a rank was preempted for milliseconds on a shared machine), and the
// mean (elapsed / chunks, which counts everything). Each is the median over the repetitions; a ratio is the
// median over the repetitions of the ratio within one repetition. `ratio` in the JSON is the flat farmer's
// trimmed-mean round trip over raw MPI's (target 1.25), `request_rate_ratio` the farmer's request rate over a
// raw serving rank's (target 0.8; docs/performance.md "Targets").
// While ranks 0 and 1 measure, the other ranks wait in a sleeping barrier, so they leave the cores alone.
// The message sizes are read from the farm's own traffic (an MPI profiling-interface wrapper of MPI_Send
// records the largest message each rank sends during an untimed warm-up), so (a) keeps matching (b) when
// the protocol's headers change. The same wrapper counts the MPI calls per chunk on the farmer and the worker.
//
// The last line of the output is one JSON object (also written to --output FILE). --check makes the exit
// status non-zero when a number in it is not finite and positive; the ratio is reported, never asserted.
#include "clock.hpp"  // also x86intrin.h: __rdtsc for --profile

#include "pfarm/claim_schedule.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/output_file.hpp"
#include "pfarm/registry.hpp"

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// ---------------------------------------------------------------------------------------------------------
// MPI profiling interface: message sizes and call counts, only while `tally.on` (the warm-up run); the times at
// which the farmer's receives of requests complete, while `tally.stamps` is set (a timed farm, on rank 0).
namespace {
struct mpi_tally {
    bool on = false;
    /// When set (rank 0, during a timed farm): the time each receive of a request completes, taken as the raw
    /// server stamps its receives, so that the farm's gaps are measured exactly like raw MPI's.
    std::vector<double>* stamps = nullptr;
    long long send = 0, recv = 0, probe = 0, iprobe = 0, get_count = 0;
    long long largest = 0;  ///< bytes of the largest message this rank sent (worker: a request, farmer: a reply)
};
mpi_tally tally;

/// --profile: on each rank, the TSC ticks from a receive's completion to the start of its next send, one sample per
/// exchange: what a rank does with a message before it answers (raw MPI: nothing; the farm: decode, session,
/// encode), measured alike for both, so that their difference is the farm's own per-side cost. Reported as the mean
/// up to the 99th percentile: a preemption in the middle of one sample would otherwise add tens of ns to the mean.
struct handling_tally {
    bool on = false;
    std::uint64_t since = 0;  ///< when the last receive completed (0: none since the last send)
    std::vector<std::uint32_t> samples;
    void received() {
        if (on) since = __rdtsc();
    }
    void sending() {
        if (!on || since == 0) return;
        samples.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(__rdtsc() - since, UINT32_MAX)));
        since = 0;
    }
    /// The mean of the samples up to their 99th percentile, in ticks (0: none).
    double trimmed_ticks() {
        if (samples.empty()) return 0.0;
        std::sort(samples.begin(), samples.end());
        const std::size_t kept = (samples.size() - 1) * 99 / 100 + 1;
        double sum = 0.0;
        for (std::size_t i = 0; i < kept; ++i) sum += samples[i];
        return sum / static_cast<double>(kept);
    }
};
handling_tally handling;
}  // namespace

extern "C" int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    if (tally.on) {
        ++tally.send;
        int size = 0;
        PMPI_Type_size(type, &size);
        tally.largest = std::max(tally.largest, static_cast<long long>(count) * size);
    }
    handling.sending();
    return PMPI_Send(buf, count, type, dest, tag, comm);
}
extern "C" int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
    if (tally.on) ++tally.recv;
    const int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
    handling.received();
    if (tally.stamps && tag == 1) tally.stamps->push_back(MPI_Wtime());  // the farmer receives a request
    return rc;
}
extern "C" int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
    if (tally.on) ++tally.probe;
    return PMPI_Probe(source, tag, comm, status);
}
extern "C" int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
    if (tally.on) ++tally.iprobe;
    return PMPI_Iprobe(source, tag, comm, flag, status);
}
extern "C" int MPI_Wait(MPI_Request* request, MPI_Status* status) {
    if (!tally.stamps) {
        const int rc = PMPI_Wait(request, status);
        handling.received();
        return rc;
    }
    MPI_Status local;
    MPI_Status* s = status == MPI_STATUS_IGNORE ? &local : status;
    const int rc = PMPI_Wait(request, s);
    handling.received();
    if (s->MPI_TAG == 1) tally.stamps->push_back(MPI_Wtime());  // a request (the farm's tag_request)
    return rc;
}
extern "C" int MPI_Waitany(int count, MPI_Request* requests, int* index, MPI_Status* status) {
    if (!tally.stamps) return PMPI_Waitany(count, requests, index, status);
    MPI_Status local;
    MPI_Status* s = status == MPI_STATUS_IGNORE ? &local : status;
    const int rc = PMPI_Waitany(count, requests, index, s);
    handling.received();
    if (*index != MPI_UNDEFINED && s->MPI_TAG == 1) tally.stamps->push_back(MPI_Wtime());
    return rc;
}
/// (d): every MPI_Fetch_and_op of this rank while `claims.on`: how many, when the first began, and when the
/// latest of every 64th ended (a clock read costs about a third of a claim on this machine: reading it at every
/// claim would slow both loops measured; the last up to 63 claims, some microseconds, are left out of both).
struct claim_tally {
    bool on = false;
    long long count = 0, stamped = 0;  ///< claims, and claims up to the last stamp
    double first = 0.0, last = 0.0;
};
claim_tally claims;
extern "C" int MPI_Fetch_and_op(const void* origin, void* result, MPI_Datatype type, int target, MPI_Aint at,
                                MPI_Op op, MPI_Win win) {
    if (!claims.on) return PMPI_Fetch_and_op(origin, result, type, target, at, op, win);
    if (claims.count == 0) claims.first = MPI_Wtime();
    const int rc = PMPI_Fetch_and_op(origin, result, type, target, at, op, win);
    if (++claims.count % 64 == 0) claims.last = MPI_Wtime(), claims.stamped = claims.count;
    return rc;
}
extern "C" int MPI_Get_count(const MPI_Status* status, MPI_Datatype type, int* count) {
    if (tally.on) ++tally.get_count;
    return PMPI_Get_count(status, type, count);
}

namespace {

using pfarm::mpi::check;

constexpr int tag_request = 1, tag_reply = 2;
constexpr double target_ratio = 1.25;       ///< target: round trip at most 1.25 x raw MPI's
constexpr double target_rate_ratio = 0.8;   ///< target: request rate at least 0.8 x a raw serving rank's

struct settings {
    long long tasks = 5000;        ///< chunks per pair measurement
    int repetitions = 15;
    long long rate_tasks = 5000;   ///< chunks per worker in the all-ranks measurement
    long long claim_tasks = 400000;  ///< claims per repetition of (d), over all ranks
    std::string output;
    bool check = false;
    bool verbose = false;  ///< print every repetition's numbers
    bool profile = false;  ///< only (a) and (b), for a profiler; no JSON
};

[[noreturn]] void usage(const std::string& why) {
    throw pfarm::invalid_argument("arguments", why + "; usage: pfarm-bench-overhead [--tasks N] [--repetitions R] "
                                                     "[--rate-tasks M] [--claim-tasks C] [--output FILE] [--check] "
                                                     "[--verbose] [--profile]");
}

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        const auto positive = [&](const std::string& text) {
            char* end = nullptr;
            errno = 0;
            const long long v = std::strtoll(text.c_str(), &end, 10);
            if (text.empty() || *end != '\0' || v < 1) usage(a + " is '" + text + "'; expected an integer >= 1");
            if (errno == ERANGE) usage(a + " is '" + text + "': out of range");
            return v;
        };
        if (a == "--tasks") s.tasks = positive(value());
        else if (a == "--repetitions") s.repetitions = static_cast<int>(positive(value()));
        else if (a == "--rate-tasks") s.rate_tasks = positive(value());
        else if (a == "--claim-tasks") s.claim_tasks = positive(value());
        else if (a == "--output") s.output = value();
        else if (a == "--check") s.check = true;
        else if (a == "--verbose") s.verbose = true;
        else if (a == "--profile") s.profile = true;
        else usage("unknown argument '" + a + "'");
    }
    return s;
}

double median(std::vector<double> v) {
    if (v.empty()) return std::nan("");
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// A barrier that sleeps while it waits: the ranks that are not measuring free their cores. Point-to-point
/// (tags 90, 91), not MPI_Ibarrier: a non-blocking collective would add its progress function to every MPI
/// poll loop of the process for the rest of the run, the measured ones included.
void sleeping_barrier(MPI_Comm comm) {
    constexpr int tag_arrive = 90, tag_leave = 91;
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char token = 0;
    const auto await = [&](int source, int tag) {
        MPI_Request request;
        check(MPI_Irecv(&token, 1, MPI_CHAR, source, tag, comm, &request), "MPI_Irecv");
        for (int done = 0;;) {
            check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) return;
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    };
    if (rank == 0) {
        for (int q = 1; q < size; ++q) await(q, tag_arrive);
        for (int q = 1; q < size; ++q) check(MPI_Send(&token, 1, MPI_CHAR, q, tag_leave, comm), "MPI_Send");
    } else {
        check(MPI_Send(&token, 1, MPI_CHAR, 0, tag_arrive, comm), "MPI_Send");
        await(0, tag_leave);
    }
}

/// Max over `world` of a value only some ranks know (the others pass 0).
double share(MPI_Comm world, double value) {
    double out = 0.0;
    check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, world), "MPI_Allreduce");
    return out;
}

/// One measurement on rank 0, in seconds, from the gaps between consecutive requests arriving at rank 0
/// (with one worker, the per-chunk round trip): their median is robust to a rank being preempted for a
/// while, but blind to a cost paid every few chunks (a page fault as the farm's trace grows); the trimmed
/// mean (the gaps up to the 99th percentile) counts such costs and still drops the rare preempted gaps; the
/// mean (elapsed / chunks) counts everything.
struct timing {
    double gap = 0.0;  ///< median gap
    double gap_p10 = 0.0, gap_p90 = 0.0;
    double trimmed = 0.0;  ///< mean of the gaps up to the 99th percentile
    double mean = 0.0;
    std::vector<std::pair<double, std::size_t>> largest;  ///< the largest gaps and the chunk each one ended
};

/// The gap statistics of `stamps` (rank 0's clock, taken as each request arrives), and `mean`.
timing gaps(std::vector<double> stamps, double mean) {
    std::sort(stamps.begin(), stamps.end());
    std::vector<std::pair<double, std::size_t>> by_size;
    by_size.reserve(stamps.size());
    for (std::size_t i = 1; i < stamps.size(); ++i) by_size.push_back({stamps[i] - stamps[i - 1], i});
    const double nan = std::nan("");
    if (by_size.empty()) return {nan, nan, nan, nan, mean, {}};
    std::sort(by_size.begin(), by_size.end());
    std::vector<double> g(by_size.size());
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = by_size[i].first;
    const auto index = [&](double q) { return static_cast<std::size_t>(q * static_cast<double>(g.size() - 1)); };
    const std::size_t kept = index(0.99) + 1;
    double sum = 0.0;
    for (std::size_t i = 0; i < kept; ++i) sum += g[i];
    std::vector<std::pair<double, std::size_t>> largest(by_size.rbegin(),
                                                         by_size.rbegin() + std::min<std::ptrdiff_t>(5, by_size.size()));
    return {median(g), g[index(0.1)], g[index(0.9)], sum / static_cast<double>(kept), mean, std::move(largest)};
}

/// How a raw exchange receives: with one MPI_Recv, probed (MPI_Probe, MPI_Get_count, MPI_Recv of the probed
/// message), or as the farm does (a receive posted ahead into a buffer, MPI_Wait, MPI_Get_count,
/// the receive posted again).
enum class receive_mode { recv, probe, posted };

/// The farm's clock, the engine's own (skeleton/mpi/src/clock.hpp: internal, its folder is on this benchmark's
/// include path), so that (a'') and the chores of (d) read what a worker reads.
double farm_clock() { return pfarm::detail::now(); }

/// Where the farm's clock reads from on this rank, in words.
const char* farm_clock_source() {
    switch (pfarm::detail::the_farm_clock.from()) {
    case pfarm::detail::farm_clock::source::tsc: return "the TSC, scaled to CLOCK_MONOTONIC";
    case pfarm::detail::farm_clock::source::monotonic: return "CLOCK_MONOTONIC";
    default: return "CLOCK_MONOTONIC (the TSC's scale not measured yet)";
    }
}

/// A receive of at most `buffer.size()` bytes from `source` with `tag`, in `mode`.
class receiver {
public:
    receiver(MPI_Comm comm, int source, int tag, std::vector<char>& buffer, receive_mode mode)
        : comm_(comm), source_(source), tag_(tag), buffer_(buffer), mode_(mode) {
        if (mode_ == receive_mode::posted) post();
    }
    ~receiver() {
        if (request_ != MPI_REQUEST_NULL) MPI_Cancel(&request_), MPI_Wait(&request_, MPI_STATUS_IGNORE);
    }
    void receive(MPI_Status* status) {
        MPI_Status got;
        switch (mode_) {
        case receive_mode::recv:
            check(MPI_Recv(buffer_.data(), static_cast<int>(buffer_.size()), MPI_BYTE, source_, tag_, comm_, &got), "MPI_Recv");
            break;
        case receive_mode::probe: {
            MPI_Status probed;
            check(MPI_Probe(source_, tag_, comm_, &probed), "MPI_Probe");
            int bytes = 0;
            check(MPI_Get_count(&probed, MPI_BYTE, &bytes), "MPI_Get_count");
            check(MPI_Recv(buffer_.data(), bytes, MPI_BYTE, probed.MPI_SOURCE, tag_, comm_, &got), "MPI_Recv");
            break;
        }
        case receive_mode::posted: {
            check(PMPI_Wait(&request_, &got), "MPI_Wait");  // PMPI: not stamped as a farm's receive
            int bytes = 0;
            check(MPI_Get_count(&got, MPI_BYTE, &bytes), "MPI_Get_count");
            post();
            break;
        }
        }
        if (status != MPI_STATUS_IGNORE) *status = got;
    }

private:
    void post() {
        check(MPI_Irecv(buffer_.data(), static_cast<int>(buffer_.size()), MPI_BYTE, source_, tag_, comm_, &request_), "MPI_Irecv");
    }
    MPI_Comm comm_;
    int source_, tag_;
    std::vector<char>& buffer_;
    receive_mode mode_;
    MPI_Request request_ = MPI_REQUEST_NULL;
};

/// (a) and the raw request rate: each of ranks 1.. makes `per_client` round trips to rank 0, which serves
/// them from MPI_ANY_SOURCE and stamps the time after each receive, as the farmer does. The mean is rank 0's
/// time from the barrier to its last reply, over the round trips served. `mode`: how both sides receive.
/// `timed`: the clients read the farm's clock after each reply and before each request, as a farm's worker times
/// its chunk ((a'')).
timing raw_exchange(MPI_Comm comm, long long per_client, std::size_t request_bytes, std::size_t reply_bytes,
                    receive_mode mode = receive_mode::recv, bool timed = false) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    // A posted receive takes any size up to its buffer's, as the farm's do; the exact size otherwise.
    std::vector<char> request(mode == receive_mode::posted ? 65536 : request_bytes, 1),
        reply(mode == receive_mode::posted ? 65536 : reply_bytes, 2);
    const long long total = per_client * (size - 1);
    std::vector<double> stamps(rank == 0 ? static_cast<std::size_t>(total) : 0);
    receiver in(comm, rank == 0 ? MPI_ANY_SOURCE : 0, rank == 0 ? tag_request : tag_reply, rank == 0 ? request : reply, mode);
    check(MPI_Barrier(comm), "MPI_Barrier");
    const double start = MPI_Wtime();
    if (rank == 0) {
        for (long long i = 0; i < total; ++i) {
            MPI_Status status;
            in.receive(&status);
            stamps[static_cast<std::size_t>(i)] = MPI_Wtime();
            check(MPI_Send(reply.data(), static_cast<int>(reply_bytes), MPI_BYTE, status.MPI_SOURCE, tag_reply, comm),
                  "MPI_Send");
        }
    } else if (!timed) {
        for (long long i = 0; i < per_client; ++i) {
            check(MPI_Send(request.data(), static_cast<int>(request_bytes), MPI_BYTE, 0, tag_request, comm), "MPI_Send");
            in.receive(MPI_STATUS_IGNORE);
        }
    } else {
        double started = 0.0, busy = 0.0;
        for (long long i = 0; i < per_client; ++i) {
            if (i > 0) busy += farm_clock() - started;  // the "chunk" ends
            check(MPI_Send(request.data(), static_cast<int>(request_bytes), MPI_BYTE, 0, tag_request, comm), "MPI_Send");
            in.receive(MPI_STATUS_IGNORE);
            started = farm_clock();  // the next one starts
        }
        if (!(busy >= 0.0)) throw std::runtime_error("the farm's clock went backwards");  // and busy is used
    }
    const double elapsed = MPI_Wtime() - start;
    if (rank != 0) return {};
    return gaps(std::move(stamps), elapsed / static_cast<double>(total));
}

/// (b), (c) and the pfarm request rate: a farm of `tasks` empty tasks, chunk size 1 (ss). On rank 0: the
/// median gap between the arrivals of consecutive results (the farm's trace) and makespan / tasks.
timing empty_farm(MPI_Comm comm, long long tasks, bool prefetch, bool farmer_computes) {
    std::vector<double> in(static_cast<std::size_t>(tasks), 1.0), out(in.size());
    pfarm::farm_options options;
    options.schedule.technique = "ss";
    options.protocol.prefetch = prefetch;
    options.topology.farmer_computes = farmer_computes;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::vector<double> stamps;
    if (rank == 0 && !farmer_computes) {  // the farmer's receives of requests, stamped as raw MPI's are
        stamps.reserve(static_cast<std::size_t>(tasks) * 2 + 64);
        tally.stamps = &stamps;
    }
    pfarm::farm_report report;
    try {
        report = pfarm::farm(comm, std::span<const double>(in), std::span<double>(out), [](const double& x, double& y) { y = x; },
                             options);
    } catch (...) {
        tally.stamps = nullptr;
        throw;
    }
    tally.stamps = nullptr;
    if (rank != 0) return {};
    const double mean = report.makespan / static_cast<double>(tasks);
    if (stamps.size() < static_cast<std::size_t>(tasks)) return {mean, mean, mean, mean, mean, {}};  // farmer computes
    return gaps(std::move(stamps), mean);
}

/// (d) Claims per second over every rank of `world`, from the first claim anywhere to the last (the
/// MPI_Fetch_and_op wrapper's stamps; one node, one clock). `farm`: the decentralised farm of `tasks` empty tasks
/// (ss, every rank computing, replicated input); otherwise the raw loop: every rank adds 1 to a counter on rank 0
/// with MPI_Fetch_and_op and MPI_Win_flush until it reads `tasks` or more, in one MPI_Win_lock_all epoch.
/// `replay`: the raw loop also turns each step into its chunk with the core's step_schedule (ss), as the farm's
/// claims do: the claim path alone, without the farm's task call, results and clock reads.
double claim_rate(MPI_Comm world, long long tasks, bool farm, bool replay = false, bool chores = false,
                  double* mean_run = nullptr, double* rank0_share = nullptr) {
    std::vector<double> in, out;
    MPI_Win win = MPI_WIN_NULL;
    std::int64_t* counter = nullptr;
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    if (farm) {
        in.assign(static_cast<std::size_t>(tasks), 1.0);
        out.resize(rank == 0 ? in.size() : 0);
    } else {
        check(MPI_Win_allocate(rank == 0 ? 8 : 0, 8, MPI_INFO_NULL, world, &counter, &win), "MPI_Win_allocate");
        check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all");
        if (rank == 0) *counter = 0, check(MPI_Win_sync(win), "MPI_Win_sync");
        check(MPI_Barrier(world), "MPI_Barrier");
    }
    claims = {};
    claims.on = true;
    if (farm) {
        pfarm::farm_options options;
        options.schedule.technique = "ss";
        options.topology.farmer = pfarm::farmer_mode::decentralised;
        options.topology.farmer_computes = true;
        options.protocol.replicated_input = true;
        pfarm::farm(world, std::span<const double>(in), std::span<double>(out), [](const double& x, double& y) { y = x; },
                    options);
    } else {
        const std::int64_t one = 1;
        int size = 1;
        MPI_Comm_size(world, &size);
        pfarm::step_schedule steps(tasks, size, pfarm::make_technique("ss", {}, size), 1);
        long long sum = 0, mine = 0, runs = 0;
        std::int64_t previous = -2;
        const std::function<void(const double&, double&)> task = [](const double& x, double& y) { y = x; };
        std::vector<double> staged(chores ? static_cast<std::size_t>(tasks) : 0);
        double busy = 0.0;
        for (std::int64_t old = 0; old < tasks;) {
            check(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win), "MPI_Fetch_and_op");
            check(MPI_Win_flush(0, win), "MPI_Win_flush");
            if (old >= tasks) break;
            ++mine, runs += old != previous + 1, previous = old;
            if (replay) sum += steps.at(old).count;
            if (chores) {  // the farm's own work per claim, by hand: the task, its result staged, its busy time
                const double started = farm_clock();
                task(1.0, staged[static_cast<std::size_t>(mine - 1)]);
                busy += farm_clock() - started;
            }
        }
        if (replay && sum > tasks) throw pfarm::internal_error("claim path: more tasks claimed than exist");
        if (chores && busy < 0.0) throw pfarm::internal_error("claim chores: negative busy time");
        if (mean_run) {  // claims in a row by one rank, over every rank
            long long both[2] = {mine, runs}, all[2] = {0, 0};
            check(MPI_Allreduce(both, all, 2, MPI_LONG_LONG, MPI_SUM, world), "MPI_Allreduce");
            *mean_run = all[1] > 0 ? static_cast<double>(all[0]) / static_cast<double>(all[1]) : 0.0;
        }
    }
    claims.on = false;
    if (!farm) {
        check(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
        check(MPI_Win_free(&win), "MPI_Win_free");
    }
    double first = claims.stamped > 0 ? claims.first : 1e300, last = claims.stamped > 0 ? claims.last : -1e300;
    long long count = claims.stamped, total = 0;
    double start = 0.0, end = 0.0;
    check(MPI_Allreduce(&first, &start, 1, MPI_DOUBLE, MPI_MIN, world), "MPI_Allreduce");
    check(MPI_Allreduce(&last, &end, 1, MPI_DOUBLE, MPI_MAX, world), "MPI_Allreduce");
    check(MPI_Allreduce(&count, &total, 1, MPI_LONG_LONG, MPI_SUM, world), "MPI_Allreduce");
    if (rank0_share) {  // rank 0's part of every fetch-and-op issued: where the window lives, an op may be local
        long long counts[2] = {claims.count, rank == 0 ? claims.count : 0};  // every rank's, rank 0's
        check(MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_LONG_LONG, MPI_SUM, world), "MPI_Allreduce");
        *rank0_share = counts[0] > 0 ? static_cast<double>(counts[1]) / static_cast<double>(counts[0]) : 0.0;
    }
    return static_cast<double>(total) / (end - start);
}

/// One measurement's repetitions, in microseconds.
struct series {
    std::vector<timing> runs;
    void add(const timing& t) {
        runs.push_back({t.gap * 1e6, t.gap_p10 * 1e6, t.gap_p90 * 1e6, t.trimmed * 1e6, t.mean * 1e6, t.largest});
        for (auto& [gap, chunk] : runs.back().largest) gap *= 1e6;
    }
    double gap_us() const { return median(pick(&timing::gap)); }
    double trimmed_us() const { return median(pick(&timing::trimmed)); }
    double mean_us() const { return median(pick(&timing::mean)); }
    std::vector<double> pick(double timing::*field) const {
        std::vector<double> v;
        for (const timing& t : runs) v.push_back(t.*field);
        return v;
    }
};

/// The median over the repetitions of a / b, each repetition's a and b measured back to back: this cancels
/// the slow drifts of a shared machine (another job, a vCPU moved to another core) that the medians of a
/// and b taken apart keep.
double paired_ratio(const series& a, const series& b, double timing::*field) {
    std::vector<double> ratios;
    for (std::size_t i = 0; i < std::min(a.runs.size(), b.runs.size()); ++i)
        ratios.push_back(a.runs[i].*field / b.runs[i].*field);
    return median(ratios);
}

struct results {
    int ranks = 0;
    long long request_bytes = 0, reply_bytes = 0;
    double wtime_ns = 0.0;  ///< one MPI_Wtime call on rank 0
    double clock_ns = 0.0;  ///< one read of the farm's clock on rank 0 (a farm's worker reads it twice per chunk)
    series raw, raw_posted, raw_timed, flat, prefetch, computes;  ///< ranks 0 and 1
    series raw_all, all;                   ///< every rank asking; gaps between any two requests
    double calls[2][5] = {};  ///< per chunk on the farmer [0] and the worker [1]: send recv probe iprobe get_count
    std::vector<double> claim_rate, raw_claim_rate, path_claim_rate;  ///< (d), claims per second, per repetition
    std::vector<double> chores_claim_rate;  ///< (d) the raw loop doing the farm's per-claim work by hand
    std::vector<double> raw_mean_run;       ///< (d) the raw loop's claims in a row by one rank
    std::vector<double> raw_share0, share0;  ///< (d) rank 0's share of the raw loop's and the farm's fetch-and-ops
    /// The median over the repetitions of `a` / raw, each repetition's pair measured back to back.
    double claim_ratio(const std::vector<double>& a) const {
        std::vector<double> ratios;
        for (std::size_t i = 0; i < std::min(a.size(), raw_claim_rate.size()); ++i) ratios.push_back(a[i] / raw_claim_rate[i]);
        return median(ratios);
    }
    double claim_ratio() const { return claim_ratio(claim_rate); }
};

std::string json(const results& r, const settings& s) {
    std::ostringstream o;
    o.precision(6);
    const int workers = r.ranks - 1;
    const auto ratio = [&](const series& x, double timing::*field) { return paired_ratio(x, r.raw, field); };
    const double headline = ratio(r.flat, &timing::trimmed);
    o << "{\"benchmark\":\"pfarm-bench-overhead\",\"ranks\":" << r.ranks << ",\"workers\":" << workers
      << ",\"tasks\":" << s.tasks << ",\"rate_tasks_per_worker\":" << s.rate_tasks << ",\"repetitions\":" << s.repetitions
      << ",\"statistic\":\"round trips: the mean of the gaps between requests arriving at rank 0 up to their 99th "
         "percentile (trimmed), median over the repetitions; ratios: median over the repetitions of the ratio "
         "within one repetition\",\"timer\":\"MPI_Wtime\""
      << ",\"wtime_ns\":" << r.wtime_ns
      << ",\"request_bytes\":" << r.request_bytes << ",\"reply_bytes\":" << r.reply_bytes
      // the headline: trimmed means
      << ",\"raw_round_trip_us\":" << r.raw.trimmed_us() << ",\"pfarm_round_trip_us\":" << r.flat.trimmed_us()
      << ",\"ratio\":" << headline << ",\"target_ratio\":" << target_ratio
      << ",\"meets_target\":" << (headline <= target_ratio ? "true" : "false")
      // the same by the other two statistics
      << ",\"raw_median_round_trip_us\":" << r.raw.gap_us() << ",\"pfarm_median_round_trip_us\":" << r.flat.gap_us()
      << ",\"median_ratio\":" << ratio(r.flat, &timing::gap)
      << ",\"raw_mean_round_trip_us\":" << r.raw.mean_us() << ",\"pfarm_mean_round_trip_us\":" << r.flat.mean_us()
      << ",\"mean_ratio\":" << ratio(r.flat, &timing::mean)
      // MPI's part: raw MPI received the way the farm receives
      << ",\"raw_posted_round_trip_us\":" << r.raw_posted.trimmed_us()
      << ",\"raw_posted_ratio\":" << ratio(r.raw_posted, &timing::trimmed)
      << ",\"raw_timed_round_trip_us\":" << r.raw_timed.trimmed_us()
      << ",\"raw_timed_ratio\":" << ratio(r.raw_timed, &timing::trimmed) << ",\"clock_ns\":" << r.clock_ns
      << ",\"prefetch_round_trip_us\":" << r.prefetch.trimmed_us()
      << ",\"prefetch_ratio\":" << ratio(r.prefetch, &timing::trimmed)
      << ",\"prefetch_median_ratio\":" << ratio(r.prefetch, &timing::gap)
      << ",\"farmer_computes_us_per_chunk\":" << r.computes.mean_us()
      << ",\"request_rate_per_s\":" << 1e6 / r.all.trimmed_us()
      << ",\"raw_request_rate_per_s\":" << 1e6 / r.raw_all.trimmed_us()
      << ",\"request_rate_ratio\":" << paired_ratio(r.raw_all, r.all, &timing::trimmed)
      << ",\"target_request_rate_ratio\":" << target_rate_ratio
      << ",\"meets_request_rate_target\":" << (paired_ratio(r.raw_all, r.all, &timing::trimmed) >= target_rate_ratio ? "true" : "false")
      << ",\"request_rate_median_per_s\":" << 1e6 / r.all.gap_us()
      << ",\"raw_request_rate_median_per_s\":" << 1e6 / r.raw_all.gap_us()
      << ",\"request_rate_mean_per_s\":" << 1e6 / r.all.mean_us()
      << ",\"raw_request_rate_mean_per_s\":" << 1e6 / r.raw_all.mean_us()
      << ",\"all_ranks_round_trip_us\":" << r.all.trimmed_us() * workers
      << ",\"raw_all_ranks_round_trip_us\":" << r.raw_all.trimmed_us() * workers
      << ",\"farmer_mpi_calls_per_chunk\":{\"send\":" << r.calls[0][0] << ",\"recv\":" << r.calls[0][1]
      << ",\"probe\":" << r.calls[0][2] << ",\"iprobe\":" << r.calls[0][3] << ",\"get_count\":" << r.calls[0][4]
      << "},\"worker_mpi_calls_per_chunk\":{\"send\":" << r.calls[1][0] << ",\"recv\":" << r.calls[1][1]
      << ",\"probe\":" << r.calls[1][2] << ",\"iprobe\":" << r.calls[1][3] << ",\"get_count\":" << r.calls[1][4]
      << "},\"hierarchical\":\"not measured\""
      << ",\"claim_tasks\":" << s.claim_tasks << ",\"decentralised_claim_rate_per_s\":" << median(r.claim_rate)
      << ",\"raw_fetch_and_op_rate_per_s\":" << median(r.raw_claim_rate)
      << ",\"decentralised_claim_rate_ratio\":" << r.claim_ratio()
      << ",\"claim_path_rate_per_s\":" << median(r.path_claim_rate)
      << ",\"claim_path_rate_ratio\":" << r.claim_ratio(r.path_claim_rate)
      << ",\"claim_chores_rate_per_s\":" << median(r.chores_claim_rate)
      << ",\"claim_chores_rate_ratio\":" << r.claim_ratio(r.chores_claim_rate)
      << ",\"raw_claims_in_a_row\":" << median(r.raw_mean_run)
      << ",\"raw_rank0_claim_share\":" << median(r.raw_share0) << ",\"decentralised_rank0_claim_share\":" << median(r.share0)
      << ",\"target_claim_rate_ratio\":" << target_rate_ratio
      << ",\"meets_claim_rate_target\":" << (r.claim_ratio() >= target_rate_ratio ? "true" : "false") << "}";
    return o.str();
}

bool sane(const results& r) {
    for (const series* x : {&r.raw, &r.raw_posted, &r.raw_timed, &r.flat, &r.prefetch, &r.raw_all, &r.all})
        for (double v : {x->gap_us(), x->mean_us()})
            if (!std::isfinite(v) || !(v > 0.0)) return false;
    for (double v : {median(r.claim_rate), median(r.raw_claim_rate), median(r.path_claim_rate), median(r.chores_claim_rate),
                     median(r.raw_mean_run)})
        if (!std::isfinite(v) || !(v > 0.0)) return false;
    const double v = r.computes.mean_us();
    return std::isfinite(v) && v > 0.0 && r.request_bytes > 0 && r.reply_bytes > 0 && std::isfinite(r.wtime_ns) &&
           r.wtime_ns > 0.0 && std::isfinite(r.clock_ns) && r.clock_ns > 0.0;
}

void print(const results& r, const settings& s) {
    const int workers = r.ranks - 1;
    const double ratio = paired_ratio(r.flat, r.raw, &timing::trimmed);
    std::printf("pfarm-bench-overhead: %d ranks; %lld empty tasks of chunk size 1 per measurement; %d repetitions, "
                "interleaved; MPI_Wtime\n",
                r.ranks, s.tasks, s.repetitions);
    std::printf("per chunk, from the gaps between consecutive requests arriving at rank 0: their median (blind to\n"
                "costs paid every few chunks), their trimmed mean (up to the 99th percentile: counts those, drops\n"
                "the rare gaps a preempted rank makes; the headline), and the mean (elapsed / chunks: counts\n"
                "everything); each the median over the repetitions; ratios: the median over the repetitions of\n"
                "the ratio within one repetition\n");
    std::printf("messages: request %lld B, reply %lld B (the farm's own, read from its traffic)\n", r.request_bytes,
                r.reply_bytes);
    std::printf("MPI calls per chunk: farmer send %.2f recv %.2f probe %.2f iprobe %.2f get_count %.2f; "
                "worker send %.2f recv %.2f probe %.2f iprobe %.2f get_count %.2f\n",
                r.calls[0][0], r.calls[0][1], r.calls[0][2], r.calls[0][3], r.calls[0][4], r.calls[1][0], r.calls[1][1],
                r.calls[1][2], r.calls[1][3], r.calls[1][4]);
    if (s.verbose) {
        const std::pair<const char*, const series*> all[] = {{"raw", &r.raw},           {"raw-posted", &r.raw_posted}, {"raw-timed", &r.raw_timed},
                                                             {"flat", &r.flat},
                                                             {"prefetch", &r.prefetch}, {"computes", &r.computes},
                                                             {"raw-all", &r.raw_all},   {"pfarm-all", &r.all}};
        std::printf("repetition  measurement  gap p10 / median / p90 us   trimmed us   mean us   largest gaps: us@chunk\n");
        for (const auto& [name, x] : all)
            for (std::size_t i = 0; i < x->runs.size(); ++i) {
                const timing& t = x->runs[i];
                std::printf("%10zu  %-11s  %7.3f / %7.3f / %7.3f   %10.3f  %8.3f  ", i, name, t.gap_p10, t.gap, t.gap_p90,
                            t.trimmed, t.mean);
                for (const auto& [gap, chunk] : t.largest) std::printf(" %.0f@%zu", gap, chunk);
                std::printf("\n");
            }
    }
    const auto row = [&](const char* label, const series& x, const char* note) {
        std::printf("%-42s %8.3f %6.2f | %8.3f %6.2f | %8.3f %6.2f  %s\n", label, x.gap_us(),
                    paired_ratio(x, r.raw, &timing::gap), x.trimmed_us(), paired_ratio(x, r.raw, &timing::trimmed),
                    x.mean_us(), paired_ratio(x, r.raw, &timing::mean), note);
    };
    std::printf("clock: the farm's (%s) costs %.0f ns per read here, MPI_Wtime %.0f ns; a worker reads the farm's "
                "twice per chunk\n",
                farm_clock_source(), r.clock_ns, r.wtime_ns);
    std::printf("us per chunk, and / raw                    median  ratio |  trimmed  ratio |     mean  ratio\n");
    row("(a) raw MPI ping-pong, rank 1 -> 0 -> 1", r.raw, "");
    row("(a') raw, received as with reclaim", r.raw_posted, "receive posted ahead: MPI_Wait + MPI_Get_count + MPI_Irecv");
    row("(a'') raw, rank 1 reading the clock twice", r.raw_timed, "as a worker times its chunk: any timing farm's floor");
    char verdict[64];
    std::snprintf(verdict, sizeof verdict, "target %s (trimmed %.2f <= %.2f)", ratio <= target_ratio ? "met" : "MISSED",
                  ratio, target_ratio);
    row("(b) pfarm flat farmer, ss, 1 worker", r.flat, verdict);
    row("(c) pfarm flat farmer with prefetch", r.prefetch, "");
    std::printf("%-42s %8s %6s | %8s %6s | %8.3f %6s  (reference)\n", "    farmer computes too (2 ranks compute)", "",
                "", "", "", r.computes.mean_us(), "");
    std::printf("    hierarchical farmer                       not measured (docs/hierarchical.md)\n");

    std::printf("all %d ranks asking (%d workers), requests served per second by rank 0, and pfarm / raw:\n", r.ranks,
                workers);
    const double rate_ratio = paired_ratio(r.raw_all, r.all, &timing::trimmed);
    std::printf("    from the trimmed mean gap %10.0f pfarm, %10.0f raw MPI, %5.2f  target %s (>= %.1f)\n",
                1e6 / r.all.trimmed_us(), 1e6 / r.raw_all.trimmed_us(), rate_ratio,
                rate_ratio >= target_rate_ratio ? "met" : "MISSED", target_rate_ratio);
    std::printf("    from the median gap       %10.0f pfarm, %10.0f raw MPI, %5.2f\n", 1e6 / r.all.gap_us(),
                1e6 / r.raw_all.gap_us(), paired_ratio(r.raw_all, r.all, &timing::gap));
    std::printf("    from the mean             %10.0f pfarm, %10.0f raw MPI, %5.2f\n", 1e6 / r.all.mean_us(),
                1e6 / r.raw_all.mean_us(), paired_ratio(r.raw_all, r.all, &timing::mean));
    const double claim_ratio = r.claim_ratio();
    std::printf("(d) decentralised farm, all %d ranks claiming (ss, empty tasks), claims per second, and / raw:\n", r.ranks);
    std::printf("    %10.0f decentralised, %10.0f raw MPI_Fetch_and_op + MPI_Win_flush, %5.2f  target %s (>= %.1f)\n",
                median(r.claim_rate), median(r.raw_claim_rate), claim_ratio, claim_ratio >= target_rate_ratio ? "met" : "MISSED",
                target_rate_ratio);
    std::printf("    %10.0f the claim path alone (the same loop turning each step into its chunk: step_schedule), %5.2f\n",
                median(r.path_claim_rate), r.claim_ratio(r.path_claim_rate));
    std::printf("    %10.0f the claim path and the farm's chores by hand (task call, result staged, 2 clock reads), %5.2f\n",
                median(r.chores_claim_rate), r.claim_ratio(r.chores_claim_rate));
    std::printf("    the raw loop's claims in a row by one rank: %.2f (its rate counts on them; any work between claims"
                " breaks them)\n", median(r.raw_mean_run));
    std::printf("    rank 0's share of the fetch-and-ops (the window is on rank 0): %.2f raw, %.2f decentralised\n",
                median(r.raw_share0), median(r.share0));
    if (s.verbose)
        for (std::size_t i = 0; i < r.claim_rate.size(); ++i)
            std::printf("    repetition %zu: %10.0f decentralised, %10.0f raw, %5.2f; claim path %10.0f, %5.2f\n", i,
                        r.claim_rate[i], r.raw_claim_rate[i], r.claim_rate[i] / r.raw_claim_rate[i], r.path_claim_rate[i],
                        r.path_claim_rate[i] / r.raw_claim_rate[i]);
}

int run(int argc, char** argv) {
    const settings s = parse(argc, argv);
    MPI_Comm world;
    check(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
    int rank = 0, size = 0;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (size < 2) throw pfarm::invalid_argument("ranks", "is 1; pfarm-bench-overhead needs at least 2 (mpiexec -n 2)");
    // --output before any measurement, an existing file left as it is: rank 0 checks, every rank learns it.
    std::string unwritable;
    if (rank == 0 && !s.output.empty()) {
        try {
            pfarm::check_output_path(s.output, "--output");
        } catch (const pfarm::invalid_argument& e) {
            unwritable = e.message();
        }
    }
    int refused = unwritable.empty() ? 0 : 1;
    check(MPI_Bcast(&refused, 1, MPI_INT, 0, world), "MPI_Bcast");
    if (refused) throw pfarm::invalid_argument("--output", rank == 0 ? unwritable : "rank 0 cannot write it");
    const bool in_pair = rank < 2;
    MPI_Comm pair;  // ranks 0 and 1: the farmer and one worker
    check(MPI_Comm_split(world, in_pair ? 0 : MPI_UNDEFINED, rank, &pair), "MPI_Comm_split");
    results r;
    r.ranks = size;

    // Warm-up (untimed): connections and first touch, then the farm's message sizes and MPI calls per chunk.
    const long long warm = std::min<long long>(s.tasks, 2000);
    if (in_pair) {
        empty_farm(pair, 50, false, false);
        tally = {};
        tally.on = true;
        empty_farm(pair, warm, false, false);
        tally.on = false;
    }
    sleeping_barrier(world);
    // With chunk size 1, the worker's largest message is a request with one result, the farmer's a reply with
    // one input, whatever tags the protocol uses.
    r.request_bytes = static_cast<long long>(share(world, rank == 1 ? static_cast<double>(tally.largest) : 0.0));
    r.reply_bytes = static_cast<long long>(share(world, rank == 0 ? static_cast<double>(tally.largest) : 0.0));
    const double mine[5] = {static_cast<double>(tally.send), static_cast<double>(tally.recv),
                            static_cast<double>(tally.probe), static_cast<double>(tally.iprobe),
                            static_cast<double>(tally.get_count)};
    for (int role = 0; role < 2; ++role)
        for (int k = 0; k < 5; ++k) r.calls[role][k] = share(world, rank == role ? mine[k] : 0.0) / static_cast<double>(warm);
    const auto request_bytes = static_cast<std::size_t>(r.request_bytes), reply_bytes = static_cast<std::size_t>(r.reply_bytes);
    if (in_pair) raw_exchange(pair, 200, request_bytes, reply_bytes);
    sleeping_barrier(world);

    if (s.profile) {
        // Each rank's handling time (a receive's completion to its next send, TSC ticks) in raw MPI and in the farm.
        handling_tally raw_handling, farm_handling;
        const std::uint64_t ticks0 = __rdtsc();
        const double wtime0 = MPI_Wtime();
        raw_handling.samples.reserve(static_cast<std::size_t>((s.tasks + 16) * s.repetitions + 64));
        farm_handling.samples.reserve(raw_handling.samples.capacity());
        const auto measured = [](handling_tally& into, auto&& run) {
            std::swap(handling.samples, into.samples);  // no allocation while timed
            handling.since = 0;
            handling.on = true;
            run();
            handling.on = false;
            std::swap(handling.samples, into.samples);
        };
        for (int rep = 0; rep < s.repetitions && in_pair; ++rep) {
            measured(raw_handling, [&] { r.raw.add(raw_exchange(pair, s.tasks, request_bytes, reply_bytes)); });
            r.raw_posted.add(raw_exchange(pair, s.tasks, request_bytes, reply_bytes, receive_mode::posted));
            r.raw_timed.add(raw_exchange(pair, s.tasks, request_bytes, reply_bytes, receive_mode::recv, true));
            measured(farm_handling, [&] { r.flat.add(empty_farm(pair, s.tasks, false, false)); });
        }
        const double ns_per_tick = 1e9 * (MPI_Wtime() - wtime0) / static_cast<double>(__rdtsc() - ticks0);
        const auto ns = [&](handling_tally& t) { return ns_per_tick * t.trimmed_ticks(); };
        const double mine[2] = {ns(raw_handling), ns(farm_handling)};
        double theirs[2] = {0.0, 0.0};  // rank 1's
        if (in_pair) {
            if (rank == 1) MPI_Send(mine, 2, MPI_DOUBLE, 0, 7, pair);
            if (rank == 0) MPI_Recv(theirs, 2, MPI_DOUBLE, 1, 7, pair, MPI_STATUS_IGNORE);
        }
        sleeping_barrier(world);
        if (rank == 0)
            std::printf("--profile: raw %.3f us, raw with probe %.3f us, flat farmer %.3f us per chunk (median gaps); "
                        "ratio %.2f; from a receive to the next send (ns, mean to the 99th percentile): rank 0 raw %.0f farm %.0f, "
                        "rank 1 raw %.0f farm %.0f\n",
                        r.raw.gap_us(), r.raw_posted.gap_us(), r.flat.gap_us(), paired_ratio(r.flat, r.raw, &timing::gap),
                        mine[0], mine[1], theirs[0], theirs[1]);
        if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
        MPI_Comm_free(&world);
        return 0;
    }

    // (a), (b), (c) on ranks 0 and 1, interleaved, so that each repetition's numbers share the machine's
    // conditions, in a rotating order and each after a sleeping barrier, so that none always runs first
    // after a sleep (a scheduler favours a process that has slept); the other ranks sleep meanwhile.
    for (int rep = 0; rep < s.repetitions; ++rep) {
        for (int k = 0; k < 6; ++k) {
            if (in_pair) {
                switch ((rep + k) % 6) {
                    case 0: r.raw.add(raw_exchange(pair, s.tasks, request_bytes, reply_bytes)); break;
                    case 1: r.flat.add(empty_farm(pair, s.tasks, false, false)); break;
                    case 2: r.prefetch.add(empty_farm(pair, s.tasks, true, false)); break;
                    case 3: r.computes.add(empty_farm(pair, s.tasks, false, true)); break;
                    case 4: r.raw_timed.add(raw_exchange(pair, s.tasks, request_bytes, reply_bytes, receive_mode::recv, true)); break;
                    default: r.raw_posted.add(raw_exchange(pair, s.tasks, request_bytes, reply_bytes, receive_mode::posted)); break;
                }
            }
            sleeping_barrier(world);
        }
    }

    // Every rank asking: the farmer's maximum request rate, beside a raw MPI server loop.
    for (int rep = 0; rep < s.repetitions; ++rep) {
        for (int k = 0; k < 2; ++k) {
            if ((rep + k) % 2 == 0)
                r.raw_all.add(raw_exchange(world, s.rate_tasks, request_bytes, reply_bytes));
            else
                r.all.add(empty_farm(world, s.rate_tasks * (size - 1), false, false));
            sleeping_barrier(world);
        }
    }

    if (rank == 0) {  // the clock's cost per call, alone (the other ranks wait in the next barrier)
        constexpr int calls = 1000000;
        double sum = 0.0;
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) sum += MPI_Wtime();
        const auto middle = std::chrono::steady_clock::now();
        double farm = 0.0;
        for (int i = 0; i < calls; ++i) farm += farm_clock();
        const std::chrono::duration<double, std::nano> spent = middle - start, spent_farm = std::chrono::steady_clock::now() - middle;
        r.wtime_ns = sum > 0.0 ? spent.count() / calls : 0.0;
        r.clock_ns = farm > 0.0 ? spent_farm.count() / calls : 0.0;
    }
    sleeping_barrier(world);

    // (d) The decentralised farm's claims beside raw MPI_Fetch_and_op, every rank claiming, interleaved.
    const long long claim_total = s.claim_tasks;
    claim_rate(world, std::min<long long>(claim_total, 2000), true);  // warm-up: the window's first touch
    claim_rate(world, std::min<long long>(claim_total, 2000), false);
    for (int rep = 0; rep < s.repetitions; ++rep) {
        for (int k = 0; k < 4; ++k) {
            switch ((rep + k) % 4) {
                case 0: {
                    double run = 0.0, share = 0.0;
                    r.raw_claim_rate.push_back(claim_rate(world, claim_total, false, false, false, &run, &share));
                    r.raw_mean_run.push_back(run);
                    r.raw_share0.push_back(share);
                    break;
                }
                case 1: {
                    double share = 0.0;
                    r.claim_rate.push_back(claim_rate(world, claim_total, true, false, false, nullptr, &share));
                    r.share0.push_back(share);
                    break;
                }
                case 2: r.path_claim_rate.push_back(claim_rate(world, claim_total, false, true)); break;
                default: r.chores_claim_rate.push_back(claim_rate(world, claim_total, false, true, true)); break;
            }
            sleeping_barrier(world);
        }
    }

    int ok[2] = {1, 1};  // the measurements are sane; the output was written (a failed write fails every rank)
    if (rank == 0) {
        ok[0] = sane(r) ? 1 : 0;
        print(r, s);
        const std::string line = json(r, s);
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        if (!s.output.empty()) {
            try {
                pfarm::write_output_file(s.output, "--output", line + "\n");  // whole or not at all
            } catch (const pfarm::invalid_argument& e) {
                ok[1] = 0, std::fprintf(stderr, "pfarm-bench-overhead: --output: %s\n", e.message().c_str());
            }
        }
        if (!sane(r)) std::fprintf(stderr, "pfarm-bench-overhead: a measurement is not a finite positive number\n");
    }
    check(MPI_Bcast(ok, 2, MPI_INT, 0, world), "MPI_Bcast");
    if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
    MPI_Comm_free(&world);
    if (!ok[1]) return 2;
    return s.check && !ok[0] ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment environment(&argc, &argv);
    try {
        return run(argc, argv);
    } catch (const pfarm::invalid_argument& e) {  // bad input: every rank parsed the same and throws the same
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) std::fprintf(stderr, "pfarm-bench-overhead: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pfarm-bench-overhead: %s\n", e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
}
