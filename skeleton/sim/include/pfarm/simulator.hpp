// pfarm simulator: a discrete-event driver of the farmer state machine: the core's sessions in simulated time, so what it
// predicts is what the MPI farm runs.
//
// The same pfarm::farmer that the MPI farmer drives runs here against simulated time, so what the simulator
// predicts is what an MPI run does, for every technique, without mpirun. Three farms: flat (one farmer,
// simulator.cpp), hierarchical (a supermaster, K masters and their workers, simulator_hierarchical.cpp;
// docs/hierarchical.md) and decentralised (no farmer: every worker claims its chunks with atomic operations on a
// window host's counters, the core's claim_session; simulator_decentralised.cpp). A fourth, work stealing (every
// rank owns a range and idle ranks steal half of another's; simulator_stealing.cpp), is a model of the simulator
// alone: no MPI driver runs it.
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/chunk_sizes.hpp"
#include "pfarm/cost_profile.hpp"
#include "pfarm/emulation.hpp"
#include "pfarm/prediction.hpp"
#include "pfarm/trace.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pfarm::sim {

/// The per-task cost profile of the loop: the four loop shapes of Yang, Cheng & Shih 2007 (Fig. 1) and a Mandelbrot
/// column profile. Every shape is normalised to a mean cost of 1 per task, so total work = tasks.
enum class workload_shape { uniform, increasing, decreasing, random, mandelbrot };

/// Parses "uniform", "increasing", "decreasing", "random", "mandelbrot" (pfarm::unknown_name naming "shape"
/// otherwise).
workload_shape parse_shape(const std::string& name);
std::string to_string(workload_shape shape);

struct platform {
    std::vector<double> task_times;  ///< per worker: seconds per unit-cost task (> 0)
    double overhead = 0.0;           ///< farmer service time per request (>= 0)
    double latency = 0.0;            ///< one-way message latency (>= 0)
    /// Seconds before the workers' first requests (>= 0), counted in the makespan: the MPI farm's setup (its clock
    /// offsets and round trip, the monitors' collectives), which its trace shows as the first chunk's `sent`. The
    /// flat farm only; load changes keep their times from the farm's start.
    double setup = 0.0;
    /// From simulated time `time` on, worker `worker`'s task time is multiplied by `factor` (pfarm/emulation.hpp;
    /// --load-change WORKER:TIME:FACTOR is parsed by pfarm::parse_load_change).
    std::vector<load_change> load_changes;
    /// Scripted monitor readings, one per worker, or none. A scripted availability a_j is the CPU share
    /// worker j gets: it stretches the worker's task time by 1/a_j (on top of load changes), and its monitors
    /// read a_j x min(1, 1/factor). Scripted latency and benchmark replace the simulated readings.
    std::vector<resource_sample> monitors;
    /// Hierarchical farm (run_options::farmer): a master's service time per answer (default `overhead`), the
    /// supermaster's (default `overhead`), and the one-way latency between a master and the supermaster (default
    /// `latency`, which is then the latency between a worker and its master).
    std::optional<double> master_overhead;
    std::optional<double> supermaster_overhead;
    std::optional<double> master_latency;
    /// Decentralised farm (run_options::farmer): the window host's service time per atomic operation (one at a
    /// time: the counters are one memory location each) and the one-way latency between a worker and the host
    /// (atomics, result puts, the end message). Defaults: default_atomic_overhead, default_atomic_latency.
    std::optional<double> atomic_overhead;
    std::optional<double> atomic_latency;
};

/// The decentralised farm's defaults, from this project's measurement of the raw claim loop
/// (pfarm-bench-overhead (d), docs/skeleton.md "Claim rate": MPI_Fetch_and_op + MPI_Win_flush by 2 ranks on
/// osc/sm, 5.83 M claims/s over both, the median of three runs): the host serialises them at most at that rate,
/// 1 / 5.83 M = 0.17 us each, and a rank's claim took 2 / 5.83 M = 0.343 us = 2 x latency + service, so
/// latency = 0.086 us one way. Reading the whole rate as the host's limit gives the largest service time the
/// measurement allows (the two ranks may not have saturated it).
inline constexpr double default_atomic_overhead = 0.17e-6;
inline constexpr double default_atomic_latency = 0.086e-6;

/// Reads a platform from JSON: {"task_times": [...], "overhead": x, "latency": y, "setup": s,
/// "load_changes": [{"worker": 0, "time": 10.0, "factor": 2.0}, ...],
/// "monitors": [{"availability": 0.5, "latency": 1e-4, "benchmark": 300}, ...],
/// "master_overhead": x, "supermaster_overhead": x, "master_latency": y, "atomic_overhead": x, "atomic_latency": y}
/// (only task_times is required).
/// Throws pfarm::invalid_argument naming `argument` (pfarm-sim passes its flag) with the file and the field in the
/// message on malformed input.
platform load_platform(const std::string& path, const std::string& argument = "platform");

struct workload {
    task_count tasks = 0;
    workload_shape shape = workload_shape::uniform;
    std::uint64_t seed = 1;  ///< for the random shape
    /// Measured per-task costs (one per task, > 0), replacing the shape: to replay a real run's tasks.
    /// Not normalised: with task times of 1 they are seconds.
    std::vector<double> costs;
};

/// Reads per-task costs from a file (the --costs option): one number per line ('#' comments and blank lines
/// skipped), or a pfarm trace, CSV or JSON (pfarm/trace.hpp), whose chunks are of one task each (an `ss` run):
/// task `first` costs `finished - started`. Throws invalid_argument naming `argument`, with the file and the line
/// or element in the message.
std::vector<double> load_costs(const std::string& path, const std::string& argument = "costs");

/// Per-task costs of a workload (mean 1 for the shapes; the measured costs as they are). Throws invalid_argument
/// naming "tasks", "costs" or "shape".
std::vector<double> task_costs(const workload& w);

struct worker_result {
    chunk_sizes chunks;              ///< sizes in hand-out order, calibration chunk included (the one chunk count)
    task_count tasks = 0;            ///< tasks computed, calibration task included
    double finish = 0.0;             ///< absolute simulated time its last chunk ended (0 if it got none)
};

struct result {
    double makespan = 0.0;           ///< the farmer holds the last result (calibration included)
    double lower_bound = 0.0;        ///< fluid bound: total work over the sum of speeds (load changes included)
    double total_work = 0.0;         ///< sum of the task costs (= tasks, every shape has mean cost 1)
    double percent_imbalance = 0.0;  ///< (max - mean) / max * p/(p-1) * 100 of the finish times
    double cov = 0.0;                ///< stddev / mean of the finish times
    task_count chunks = 0;           ///< chunks handed out (the workers' chunks: calibration tasks included)
    std::optional<double> k;         ///< the technique's installment factor, where it has one
    double calibration_end = 0.0;    ///< simulated time of the calibration barrier, 0 when none
    std::string calibration_note;    ///< the calibration's note (a repair, a statistical fit's fallback), or empty
    /// The calibration (F per worker, CV, k of eq. 8, mode, note) when the technique calibrated, else empty.
    std::optional<calibration_result> calibration;
    std::vector<worker_result> workers;
    /// Every chunk in hand-out order, when asked for: the farmer session's records (pfarm/trace.hpp; `rank` is the
    /// 0-based worker; sent and received are when the farmer sent it and when its results reached the farmer,
    /// started and finished its compute).
    std::vector<chunk_trace> trace;
    task_count reclaims = 0;         ///< reclaims that moved tasks (run_options::reclaim)
    task_count reclaimed_tasks = 0;  ///< tasks they moved
    /// Messages served by the farmer (flat) or the supermaster (hierarchical), and of them requests (asks).
    task_count farmer_messages = 0;
    task_count farmer_requests = 0;
    /// Hierarchical: messages the masters served (from their workers and from the supermaster), and per master the
    /// requests it sent up, of which carried a chunk's results too (merged), and the chunks it received.
    task_count master_messages = 0;
    std::vector<task_count> master_requests;
    std::vector<task_count> master_merged;
    std::vector<task_count> master_chunks;
    /// Decentralised: the atomic operations the window host served, and of them the compare-and-swaps that lost
    /// (another worker claimed first) and were retried.
    task_count host_atomics = 0;
    task_count lost_swaps = 0;
    /// Work stealing: host_atomics counts the atomics every rank's window served (claims, reads, swaps, installs) and
    /// the notices rank 0's counter served; lost_swaps the owners' and the thieves' compare-and-swaps that lost.
    /// steal_attempts: a thief's reads of a victim's range; steals: the swaps that took tasks; termination_messages:
    /// the notices to rank 0 and its stop puts (simulator_stealing.cpp).
    task_count steal_attempts = 0;
    task_count steals = 0;
    task_count termination_messages = 0;
    /// `auto` (docs/techniques/auto.md): what it chose, when and why.
    std::vector<technique_choice> choices;
};

/// Which farm the simulator runs (`stealing`: the MPI farmer_mode::stealing's model, simulator_stealing.cpp).
enum class farmer_kind { flat, hierarchical, decentralised, stealing };
/// Parses "flat", "hierarchical", "decentralised", "stealing" (pfarm::unknown_name naming "farmer" otherwise).
farmer_kind parse_farmer(const std::string& name);
std::string to_string(farmer_kind kind);

struct run_options {
    bool keep_trace = false;
    /// Work take-back (farmer.hpp "Reclaim"): a reclaim reaches the victim `latency` after the farmer's
    /// answer; the victim answers at the end of the task it is computing (after its request when that is its
    /// last task), and the answer costs the farmer `overhead` like a request.
    bool reclaim = false;
    /// flat, with reclaim: the bins of the farmer's cost profile (farmer::set_profile_bins; invalid_argument
    /// "profile_bins" when < 1, or when another count than the default is set for a farm other than flat). `auto`'s
    /// predictions simulate with fewer (docs/techniques/auto.md "Its cost").
    int profile_bins = cost_profile::default_bins;
    /// Prefetch (max_outstanding 2, farm_options::protocol.prefetch): a worker asks for its next chunk when it starts
    /// one (not past its calibration task) and sends the results of a chunk, with the next request, once that
    /// chunk has ended and the reply has reached it. With reclaim, a `later` answer (pool empty) makes it ask
    /// again with nothing in hand, and it prefetches no more.
    bool prefetch = false;
    /// flat only (the MPI farm's farm_options::topology.farmer_computes): worker 0 is the farmer's own worker, in
    /// its process. Its messages and the replies to it take no latency, it asks nothing ahead (prefetch or not),
    /// and the farmer serves the other workers' messages only between two of its tasks: a message that reaches an
    /// idle farmer while worker 0 computes a task waits for that task's end; from there the farmer serves every
    /// message waiting, one after the other, as the MPI farmer drains its queue between two of its own tasks (the
    /// time it serves is not added to worker 0's compute). invalid_argument naming "farmer_computes" for another farm.
    bool farmer_computes = false;
    /// flat only: the compute time each worker's calibration adds up to, on growing chunks (farmer.hpp "Calibration
    /// span"; the MPI farm's farm_options schedule.calibration_span, which defaults to two CPU quota periods when a
    /// rank runs under a quota). Seconds of simulated time, finite and >= 0 (invalid_argument naming
    /// "calibration_span" otherwise, and when non-zero for a farm other than flat). 0: one calibration task per
    /// worker.
    double calibration_span = 0.0;
    /// flat: one farmer serves every worker. hierarchical: a supermaster serves `masters` masters, each serving a
    /// contiguous group of workers (K groups as equal as possible, the first p mod K one larger) from its pool
    /// (pfarm/master_session.hpp); `technique` and `options` are the workers', `master_technique` the supermaster's.
    /// decentralised: no farmer; every worker claims its chunks from counters on a window host (the core's
    /// claim_session, as the MPI driver), the techniques it refuses refused alike (pfarm::check_decentralised: the
    /// same invalid_argument "technique" or "reclaim").
    farmer_kind farmer = farmer_kind::flat;
    int masters = 0;  ///< hierarchical: K, 1 <= K <= workers (invalid_argument naming "masters" otherwise)
    /// hierarchical: the supermaster's technique over the masters; empty: pfarm::default_master_technique()'s rule
    /// (pfarm/master_session.hpp), with pfarm::master_options() for its options.
    std::string master_technique;
    /// stealing: no farmer; every rank owns an equal contiguous range, claims its chunks from the front of it (the
    /// technique's rule over its own remainder: ss, css or gss) and, once it is empty, steals half of a victim's
    /// remainder from the back (simulator_stealing.cpp has the model). `victims`: "random" (a victim drawn uniformly
    /// from the other ranks, the default) or "tree" (seed 002's Tree Scheduling: always its parent in a binary
    /// tree); invalid_argument naming "victims" otherwise, and for a farm other than stealing. `victim_seed` seeds
    /// the random draws (a run is deterministic for a seed).
    std::string victims = "random";
    std::uint64_t victim_seed = 1;
};


/// Runs `technique` with `options` over `platform` and `workload`. Ties in simulated time are served in
/// increasing worker index; when the calibration barrier passes, the waiting workers are served in
/// increasing worker index. Statistical calibration reads simulated monitors (availability 1/factor, latency
/// the round trip, benchmark 1/task_time; simulator.cpp documents the whole model). Throws
/// pfarm::invalid_argument on bad input, naming the field by its C++ name ("task_times", "latency",
/// "load_changes", "monitors.availability", "tasks", "min_chunk"...; the platform's overhead is
/// "platform.overhead", technique_options' is "overhead"), never a flag. The decentralised farm's model is in
/// simulator_decentralised.cpp.
result simulate(const platform& platform, const workload& workload, const std::string& technique,
                const technique_options& options, const run_options& run = {});

/// The most chunks a prediction simulates for a technique of fixed chunk size (make_predictor).
inline constexpr task_count max_simulated_chunks = 5000;

/// The predictor `auto` asks (pfarm/prediction.hpp) in a flat farm whose farmer takes `overhead` seconds per request
/// and whose messages take `latency` seconds one way, with run's prefetch and reclaim: each candidate is simulated by
/// simulate() over the measured seconds per task and the estimate's load changes, for the uniform, increasing, decreasing,
/// random and mandelbrot profiles (in that order). A technique of fixed chunk size c over more than max_simulated_chunks x c tasks is
/// simulated over a loop of fewer tasks, each of s of them (s the least integer that brings it within), with overhead
/// and latency times s: the same work and the same farmer load. The simulator's own flat farm and the MPI flat farm
/// hand one to the farmer.
candidate_predictor make_predictor(double overhead, double latency, const run_options& run);

}  // namespace pfarm::sim
