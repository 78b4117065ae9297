// pfarm: the MPI task farm's options, grouped by concern (schedule, topology, protocol, output, resume), and what a
// farm reports (farm_report). The farm itself, its shapes and its engine are in pfarm/farm.hpp; the C API's struct
// (pfarm.h) has the same groups.
#pragma once

#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/report_merge.hpp"
#include "pfarm/schedule.hpp"
#include "pfarm/steal_schedule.hpp"
#include "pfarm/technique.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pfarm {

/// How the farmer reports progress on standard error.
enum class progress_mode {
    automatic,  ///< a bar when stderr is a terminal, occasional plain lines otherwise
    plain,      ///< occasional plain lines
    quiet,      ///< nothing
};

/// Who schedules the chunks (docs/hierarchical.md "When to choose flat, hierarchical, decentralised or stealing").
enum class farmer_mode {
    flat,           ///< one farmer on rank 0 answers every request
    hierarchical,   ///< rank 0 a supermaster, masters with task pools, the other ranks workers (docs/hierarchical.md)
    decentralised,  ///< no farmer: every rank claims its own chunks from counters in MPI one-sided memory on rank 0
    stealing,       ///< no farmer: every rank owns a range in its own window, claims from it, and steals when it is empty
};

/// "flat", "hierarchical", "decentralised", "stealing" (the tools' --farmer, the C API's farmer); invalid_argument
/// naming `argument` otherwise.
inline farmer_mode parse_farmer_mode(const std::string& name, const std::string& argument = "farmer") {
    if (name == "flat") return farmer_mode::flat;
    if (name == "hierarchical") return farmer_mode::hierarchical;
    if (name == "decentralised") return farmer_mode::decentralised;
    if (name == "stealing") return farmer_mode::stealing;
    throw invalid_argument(argument, "is '" + name + "'; expected flat, hierarchical, decentralised or stealing");
}

/// What decides the chunk sizes.
struct schedule_options {
    std::string technique = "multi";  ///< any registry name (pfarm-chunks --help)
    technique_options parameters;     ///< the technique's parameters
    /// Monitors to read beyond those the technique needs (their readings go to the trace): "loadavg" or "cgroup"
    /// (with every request), "benchmark" and "latency" (once, at the start). The technique's needs are added
    /// automatically: statistical calibration reads loadavg and benchmark (and latency for multivariate) with the
    /// calibration result; weighted techniques without weights take the benchmark values as V_j and the run queue
    /// from loadavg with every request.
    std::vector<std::string> monitors;
    /// A schedule that learns across calls (pfarm/schedule.hpp): rank 0's is read and updated; a technique that
    /// calibrates starts from what it learned and runs no calibration tasks. Null: every call calibrates.
    pfarm::schedule* learned = nullptr;
    /// The compute time (seconds, finite, >= 0) each worker's calibration must add up to: a worker keeps
    /// calibrating on growing chunks until it does (docs/calibration.md "Calibration span"), so that a CPU quota
    /// (cgroup: Slurm, containers) that lets a short task run at full speed inside its slice is seen; with a span,
    /// af and awf-* start from such a calibration too. Empty: automatic, twice the longest CPU quota period of any
    /// rank's cgroup (0.2 s under the usual 100 ms period) when some rank runs under a quota, else 0 (one
    /// calibration task per worker). Flat farmer only (a hierarchical master calibrates on one task per worker).
    std::optional<double> calibration_span;
};

/// Who schedules and who computes.
struct topology_options {
    /// A flat farmer (default), hierarchical (docs/hierarchical.md: rank 0 the supermaster, `masters` masters,
    /// every technique, reclaim within a group; not with a learned schedule), or decentralised (docs/skeleton.md
    /// "Decentralised farm": the techniques whose chunks depend only on the scheduling step, or on the worker and
    /// what remains; no reclaim; no monitors), or stealing (docs/hierarchical.md "Work stealing": ss, css, gss;
    /// every rank computes; no prefetch, reclaim, monitors or on_worker_loss).
    farmer_mode farmer = farmer_mode::flat;
    /// stealing: a thief's victim, random or tree (pfarm/steal_schedule.hpp); tree with another farmer: "victims"
    victim_rule victims = victim_rule::random;
    /// hierarchical: masters (0 = one per node, MPI_COMM_TYPE_SHARED); K > 0 splits ranks 1..N-1 into K contiguous
    /// groups, the first rank of each its master (1 <= K <= (N - 1) / 2); >= 0
    int masters = 0;
    /// hierarchical: the supermaster's technique over the masters (any registry name; empty: the workers' technique
    /// when it is a weighted scheme, dgss/dfss/dtss... giving HDGSS/HDFSS/HDTSS, else fss with x = 4, which keeps the
    /// supermaster's requests few; pfarm::default_master_technique)
    std::string master_technique;
    /// The ranks that schedule compute chunks too, serving requests between two of their tasks: rank 0 (flat,
    /// decentralised), the supermaster and every master (hierarchical; docs/hierarchical.md)
    bool farmer_computes = false;
};

/// How tasks and results travel between the farmer and the workers.
struct protocol_options {
    bool prefetch = false;  ///< a worker asks for its next chunk before computing the current one
    /// Work take-back (docs/skeleton.md "Reclaim"): once every task is handed out, an idle worker takes unstarted
    /// tasks back from the worker expected to finish last. Workers check for a reclaim between two tasks (one
    /// MPI_Iprobe per task). With prefetch too (a worker that asks ahead may take tasks back at once).
    bool reclaim = false;
    /// Stragglers (docs/reliability.md "Stragglers"): 0 (off), or a factor > 1: once every task is handed out, a
    /// chunk that has taken this many times what its worker's measured speed predicts is re-executed by idle
    /// workers, in pieces; the first results of each task win, the other copy is dropped. Workers check for a
    /// cancel between two tasks (one MPI_Iprobe per task). A task may then run twice: its function must give the
    /// same results each time and have no side effect that a second run would harm. Flat farmer only.
    double stragglers = 0.0;
    bool replicated_input = false;  ///< every rank holds the input: only task indices travel
    /// What a task that throws leads to (docs/reliability.md "Task errors"): stop (the default: the farm stops on
    /// every rank with worker_error), retry (the task runs again, on another worker where there is one, up to
    /// `attempts` runs in all; then the farm stops as with stop, naming the task and its last error; not in the
    /// work-stealing farm), or skip (the farm goes on: the task is listed in farm_report::failed_tasks and in the
    /// journal, and its outputs are the fill: each output element value-initialised, Out{}; a result of any size
    /// empty). A retried task may run twice: its function must give the same results each time. A task's process
    /// that crashes is not a task error: it ends the job (docs/reliability.md).
    task_error_rule on_task_error;
    /// A worker rank that is lost (it died: a kill, a crash, the OOM killer, its node; docs/reliability.md "A lost
    /// worker"): off (a runtime that ends the whole job when a rank dies; the journal resumes it), stop (the farm
    /// stops on the living ranks, naming it: pfarm::error), or continue (its unfinished tasks go to the others and the
    /// farm ends with every result; farm_report::lost_ranks names it). A worker is presumed lost when it sends nothing
    /// past 4 times its chunk's expected time plus a slack (5 s; parse_worker_loss_rule "continue=S"). Unset: continue
    /// when the MPI runtime keeps the job running after a rank dies (Open MPI started with orte_enable_recovery) and
    /// the farm is not work stealing, else off. Flat and hierarchical farmers (hierarchical: a worker rank inside a
    /// group, presumed lost by its master, or a master, presumed lost by rank 0) and the decentralised farm (a claimer,
    /// presumed lost by rank 0's watch); a lost rank 0 is not survived; not the work-stealing farm.
    std::optional<worker_loss_rule> on_worker_loss;
    /// Traffic of the caller's own that rank 0 serves while it farms (docs/skeleton.md "A side channel"): called on the
    /// rank that farms (rank 0 of the flat farm, the hierarchical supermaster) whenever it finds no farm message waiting,
    /// and after each task of its own when it computes (farmer_computes), it receives what has come on the caller's own
    /// communicator (an MPI_Comm_dup of theirs, never the farm's) without blocking, handles it, and returns whether
    /// anything came. While set, the farmer polls for the farm's messages (a pause that grows from nothing to 0.5 ms
    /// while neither has anything) instead of blocking in MPI_Recv. The workers send on it from their tasks; the farm
    /// never waits for what is on it: the caller receives what is left after the farm. Empty (the default, and on
    /// every other rank): nothing is polled. Not with farmer = decentralised (no rank serves messages while it runs),
    /// nor on one rank (no farmer: the tasks run in order). C++ only.
    std::function<bool()> side_channel;
};

/// What the farm shows and records beside the results.
struct output_options {
    progress_mode progress = progress_mode::quiet;
    std::string trace;          ///< write a trace: "run.csv" or "run.json" (rank 0; docs/traces.md)
    bool record_trace = false;  ///< keep the per-chunk trace in the report (implied by `trace`)
};

/// A farm that survives being stopped (pfarm/journal.hpp, docs/reliability.md).
struct resume_options {
    /// A journal file: rank 0 records each finished task's output; a rerun with the same journal restores those
    /// and farms only the rest.
    std::string journal;
    /// What else determines the outputs beyond the inputs and their shape (an app's options): a journal written
    /// with another key is refused.
    std::string journal_key;
};

namespace testing {
struct emulation;  // pfarm/testing.hpp
}

/// A farm's options, grouped by concern; every field has a default, so a call names only what it changes:
///   pfarm::farm(comm, in, out, fn, {.schedule = {.technique = "gss"}, .protocol = {.prefetch = true}});
struct farm_options {
    schedule_options schedule;
    topology_options topology;
    protocol_options protocol;
    output_options output;
    resume_options resume;
    /// Emulated heterogeneity for tests and benchmarks (pfarm/testing.hpp, testing::emulate); null: from the
    /// environment variables PFARM_SLOWDOWN and PFARM_LOAD_CHANGES when set, else none. Rank 0's is sent to every rank.
    std::shared_ptr<const testing::emulation> emulation;
};

/// What a farm did. Per-rank vectors have one entry per rank (rank 0 is the farmer). The entries the scheduling
/// sessions make (per rank: tasks, chunk sizes, busy and finish times; k, the calibration, imbalance, COV, reclaims,
/// re-executions, task errors, the trace) are report_entries' (pfarm/report_merge.hpp), as in the simulator.
struct farm_report : report_entries {
    std::string technique;
    int ranks = 0;
    int workers = 0;                 ///< the farm's workers: every rank but the farmer, or every rank when it computes
    bool sequential = false;         ///< one rank: the tasks ran in order on it
    task_count tasks = 0;
    double makespan = 0.0;           ///< start (calibration included) to the farmer holding the last result
    /// Rank of the farmer's worker 0: worker w is rank w + first_worker_rank (1; 0 when the farmer computes or the
    /// run is sequential). Entry w of the calibration's times and fitness belongs to that rank.
    int first_worker_rank = 1;
    bool learned = false;           ///< the calibration came from schedule_options::learned: no calibration tasks ran
    task_count journaled = 0;       ///< tasks restored from resume_options::journal, not computed (the rest were farmed)
    double farmer_cpu_seconds = 0.0; ///< CPU time the farmer process used (shows whether it spun idle)
    /// The round trip between rank 0 and a worker measured at the setup (per worker the least of a few ping-pongs;
    /// the lower median over the workers), seconds: what prefetch, reclaim, the straggler check and `auto` take a
    /// request to cost. 0 on one rank.
    double round_trip = 0.0;
    /// on_worker_loss stop or continue: the ranks presumed lost, in the order they were (their tasks were computed
    /// elsewhere with continue), on every living rank. Empty otherwise.
    std::vector<int> lost_ranks;
    /// Requests for work (asks) that reached rank 0 over MPI: the flat farmer's from its workers, the hierarchical
    /// supermaster's from the masters (its load); 0 in the decentralised farm (no rank serves requests).
    task_count farmer_requests = 0;
    std::vector<int> master_ranks;          ///< hierarchical: the masters' ranks (computing only with farmer_computes), by group
    std::vector<task_count> master_requests;  ///< hierarchical, rank 0: the asks each master's workers sent it
    /// hierarchical, rank 0: of each master's requests up, those that carried a chunk's results (Chronopoulos,
    /// Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for heterogeneous clusters", section 4.2, Remark 3:
    /// results and the next request in one message)
    std::vector<task_count> master_merged;
    /// hierarchical, rank 0: the chunk sizes it handed each master, in hand-out order (a lost master's chunks
    /// in flight left out, as a lost worker's are from chunks_per_rank)
    std::vector<chunk_sizes> master_chunks;
    /// hierarchical, rank 0, with a trace: the chunks it handed the masters, in hand-out order, `rank` the master's;
    /// `sent` when handed, `received` when its results came back, `started` when it reached the master and `finished`
    /// when the master had its last result (finished - started: the seconds the loss rule's pace is measured by)
    std::vector<chunk_trace> master_trace;
};

}  // namespace pfarm
