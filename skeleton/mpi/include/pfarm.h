/* pfarm: the C API of the task farm (Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible
 * workloads in heterogeneous systems", Fig. 5), usable from C and C++.
 *
 *   void square(const void *in, void *out) { *(double *)out = *(const double *)in * *(const double *)in; }
 *   pfarm(square, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, SCH_MULTI);
 *   if (pfarm_status() != PFARM_OK) fprintf(stderr, "%s\n", pfarm_error_message());
 *
 * Every rank calls pfarm collectively; only rank 0's buffers are used (all ranks' with replicated input).
 * One call of the worker computes one task: it reads one input element and writes out_length / in_length
 * output elements. Elements travel as their bytes: datatypes must be contiguous (extent == size).
 * pfarm_run_tasks and pfarm_run_range (below) call a pfarm_task_fn, which also receives the task's index and
 * the rank's user_data; pfarm_run_range farms an index range with no input array.
 * The C API never throws: failures come back as a status and a message. */
#ifndef PFARM_H
#define PFARM_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The six scheduling modes of Gonzalez-Velez & Cole, Table 2, and pfarm's choice among every technique. */
enum scheduling {
    SCH_TRAD,       /**< work queue, one task per request (technique "ss") */
    SCH_DEAL,       /**< isometric single round ("deal") */
    SCH_DEALDYN_LR, /**< single round, F from univariate statistical calibration ("dealdyn-lr") */
    SCH_DEALDYN_MV, /**< single round, F from multivariate statistical calibration ("dealdyn-mv") */
    SCH_DEALDYN_SM, /**< single round, F from times-only calibration ("dealdyn-sm") */
    SCH_MULTI,      /**< adaptive multi-round, k = ln(S)^CV ("multi") */
    SCH_AUTO        /**< pfarm chooses by simulating every technique over the measured workers ("auto") */
};

/** One task: reads one input element, writes out_length / in_length output elements. */
typedef void (*pfarm_worker_fn)(const void *in, void *out);

/** One task of pfarm_run_tasks or pfarm_run_range. `index` is the task's index: 0..in_length-1 for
 *  pfarm_run_tasks, first..first+count-1 (the absolute index) for pfarm_run_range. `in` is the task's input
 *  element (NULL for pfarm_run_range); `out` receives its out_length / in_length (or out_length / count) output
 *  elements, which land at out_data block index (index - first for a range). `user_data` is the calling rank's
 *  own options->user_data (NULL without options): each rank passes its own pointer, and every call of the task
 *  on that rank gets it (rank 0's when the farmer computes or runs alone). It may fail with pfarm_fail_task(). */
typedef void (*pfarm_task_fn)(long long index, const void *in, void *out, void *user_data);

/** Status of the calling thread's last pfarm call. */
enum pfarm_status_code {
    PFARM_OK = 0,
    PFARM_ERROR_ARGUMENT = 1, /**< bad input; pfarm_error_message() names the argument (its C name) */
    PFARM_ERROR_WORKER = 2,   /**< a task failed; pfarm_error_task() says which */
    PFARM_ERROR_MPI = 3,      /**< an MPI call failed */
    PFARM_ERROR_INTERNAL = 4  /**< anything else (a bug in pfarm) */
};

/** The paper's entry point. Returns nothing: check pfarm_status().
 *  C++ note: a C++ translation unit that also includes the C++ API (namespace pfarm) cannot see a global
 *  function of the same name; it defines PFARM_NO_PFARM_FUNCTION first and calls pfarm_sched(), the same
 *  function under another name (C++ code should prefer pfarm::farm). */
#ifndef PFARM_NO_PFARM_FUNCTION
void pfarm(pfarm_worker_fn worker, void *in_data, int in_length, MPI_Datatype in_type, void *out_data,
           int out_length, MPI_Datatype out_type, MPI_Comm comm, enum scheduling sched);
#endif
void pfarm_sched(pfarm_worker_fn worker, void *in_data, int in_length, MPI_Datatype in_type, void *out_data,
                 int out_length, MPI_Datatype out_type, MPI_Comm comm, enum scheduling sched);

/** Everything beyond the paper, grouped by concern as the C++ API's farm_options is (schedule, topology, protocol,
 *  output, resume): `o.schedule.technique = "gss"; o.protocol.prefetch = 1;`. Numeric parameters left at 0 (NULL
 *  for pointers; static_percent and calibration_span below 0) take the technique's default; any other value is checked, so a negative or
 *  NaN value is PFARM_ERROR_ARGUMENT naming the field, never the default. `weights` and `weight_count` go together
 *  (both set or neither); `progress` is 0, 1 or 2. Initialise with pfarm_options_init(), then set the fields wanted
 *  by name.
 *
 *  Versioning: `size` comes first, in every version, and pfarm_options_init (a macro) sets it to
 *  sizeof(pfarm_options) of the header the program was built with. New fields are only ever added at the end of
 *  the struct (in a group of their own), so the size tells the library which fields a program knows; a library
 *  accepts the sizes of its own and of earlier headers with the same layout (today: only its own), and any other
 *  size (0 when pfarm_options_init was not called, garbage, a newer header than the library, a header before the
 *  grouping) is PFARM_ERROR_ARGUMENT naming "options", never a misread field. A program built against another
 *  layout must be rebuilt (and its field names prefixed with their group).
 *  Every call that takes options checks the size on every rank. The farm's settings are rank 0's; the other
 *  ranks' options give only their own user_data (their other fields are still converted, so a malformed
 *  calibration name there is an error too). NULL options mean the defaults. */

/** What decides the chunk sizes. */
typedef struct pfarm_schedule_options {
    const char *technique;      /**< any registry name ("gss", "awf-b", ...); NULL: "multi" */
    long long min_chunk;        /**< no chunk below this except the last */
    long long chunk;            /**< css chunk size */
    double factor;              /**< fss x */
    long long first, last;      /**< tss F and L */
    int stages;                 /**< fiss sigma */
    double static_percent;      /**< alpha of the two-phase schemes; < 0 means default */
    double k;                   /**< pin multi's installment factor */
    const double *weights;      /**< V_j, one per worker; NULL: measured */
    int weight_count;
    const char *calibration;    /**< multi's calibration: "times", "univariate", "multivariate"; NULL: times */
    double calibration_span;    /**< seconds each worker's calibration adds up to (docs/calibration.md "Calibration
                                     span"); < 0 (pfarm_options_init's -1) means automatic: twice the longest CPU
                                     quota period of any rank's cgroup, else 0 */
} pfarm_schedule_options;

/** Who schedules and who computes. */
typedef struct pfarm_topology_options {
    const char *farmer;         /**< who schedules: "flat" (NULL), "hierarchical" (rank 0 a supermaster, `masters`
                                     masters, the rest workers; docs/hierarchical.md), "decentralised"
                                     (docs/skeleton.md "Decentralised farm"), "stealing" (every rank claims from its
                                     own range and steals from the others'; ss, css, gss; docs/hierarchical.md "Work
                                     stealing") */
    int masters;                /**< hierarchical: masters (0: one per node; K: ranks 1..N-1 in K contiguous groups) */
    const char *master_technique; /**< hierarchical: the supermaster's technique over the masters; NULL: the
                                       workers' when it is a weighted scheme (dgss...), else fss with x = 4 */
    int farmer_computes;        /**< the ranks that schedule compute too: rank 0; hierarchical: the supermaster
                                     and every master (stealing: every rank computes) */
    const char *victims;        /**< stealing: "random" (NULL: a victim drawn uniformly from the other ranks) or
                                     "tree" (Tree Scheduling: always the parent in a binary tree of the ranks) */
} pfarm_topology_options;

/** How tasks and results travel. */
typedef struct pfarm_protocol_options {
    int prefetch;               /**< workers ask for the next chunk before computing the current one */
    int reclaim;                /**< work take-back at the end of the loop (with or without prefetch) */
    double stragglers;          /**< 0: off; a factor > 1: re-execute chunks overdue by that factor on idle workers
                                     (docs/reliability.md "Stragglers"; tasks may then run twice) */
    int replicated_input;       /**< every rank holds the input: only indices travel */
    const char *on_task_error;  /**< a task that fails (pfarm_fail_task): NULL or "stop" (the farm stops:
                                     PFARM_ERROR_WORKER), "retry" or "retry=N" (it runs again, on another worker where
                                     there is one, up to N runs in all, 3 by default; then as stop; not with farmer
                                     "stealing"), "skip" (the farm goes on; its outputs are zero bytes and it is
                                     listed: pfarm_failed_count); docs/reliability.md "Task errors" */
} pfarm_protocol_options;

/** What the farm shows and records beside the results. */
typedef struct pfarm_output_options {
    int progress;               /**< 0 quiet, 1 plain lines, 2 a bar on a terminal */
    const char *trace;          /**< trace file, .csv or .json; NULL: none */
} pfarm_output_options;

/** A farm that survives being stopped (docs/reliability.md). */
typedef struct pfarm_resume_options {
    const char *journal;        /**< rank 0 records each finished task here; a rerun with the same file computes
                                     only what it lacks; NULL: none */
    const char *journal_key;    /**< what else determines the outputs (a journal written with another is refused) */
} pfarm_resume_options;

/** A worker rank that dies (docs/reliability.md "A lost worker"). */
typedef struct pfarm_loss_options {
    const char *on_worker_loss; /**< NULL: "continue" when the MPI runtime keeps the job running after a rank dies
                                     (Open MPI's orte_enable_recovery) and the farm is not work stealing, else
                                     "off"; "off" (the runtime ends the job), "stop" (the farm stops on the living
                                     ranks: PFARM_ERROR), "continue" (its tasks go to the others; pfarm_lost_count
                                     names it); "stop=S" or "continue=S": presumed lost S seconds (default 5) past 4
                                     times its chunk's expected time. Flat, hierarchical (a worker or a master) and
                                     decentralised farms; not work stealing */
} pfarm_loss_options;

typedef struct pfarm_options {
    size_t size;                /**< sizeof(pfarm_options), set by pfarm_options_init; checked by every call */
    pfarm_schedule_options schedule;
    pfarm_topology_options topology;
    pfarm_protocol_options protocol;
    pfarm_output_options output;
    pfarm_resume_options resume;
    pfarm_loss_options loss;
    void *user_data;            /**< this rank's pointer, passed to every call of a pfarm_task_fn on this rank
                                     (pfarm_run's pfarm_worker_fn does not take it) */
} pfarm_options;

/** Sets every field to its default and `size` to sizeof(pfarm_options) as the calling program sees it: the macro
 *  below passes the program's own sizeof to pfarm_options_init_size, so a program built against an older header
 *  never has more bytes written than its struct holds. (The function itself, `(pfarm_options_init)(&o)`, uses
 *  the library's size.) */
void pfarm_options_init(pfarm_options *options);
/** pfarm_options_init for a struct of `size` bytes: a size this library knows gets every field's default; any
 *  other only has `size` recorded (when it can hold it), and every call then reports "options". */
void pfarm_options_init_size(pfarm_options *options, size_t size);
#define pfarm_options_init(options) pfarm_options_init_size((options), sizeof(pfarm_options))

/** What a farm did, on rank 0 (other ranks get their own counts). */
typedef struct pfarm_result {
    double makespan;          /**< seconds, calibration included */
    double percent_imbalance; /**< of the computing ranks' finish times */
    double cov;
    double k;                 /**< installment factor, 0 when the technique has none */
    int ranks;
    int sequential;           /**< 1 when one rank ran every task */
} pfarm_result;

/** Farms with any technique and options. Returns a pfarm_status_code; `result` may be NULL. */
int pfarm_run(pfarm_worker_fn worker, const void *in_data, int in_length, MPI_Datatype in_type, void *out_data,
              int out_length, MPI_Datatype out_type, MPI_Comm comm, const pfarm_options *options,
              pfarm_result *result);

/** Farms `task` over the in_length elements of in_data (rank 0's; every rank's with replicated_input), as
 *  pfarm_run does, but the task function receives the task's index (0..in_length-1) and the rank's user_data.
 *  Lengths are 64-bit; each task writes out_length / in_length elements of out_type. Returns a pfarm_status_code;
 *  `result` may be NULL. */
int pfarm_run_tasks(pfarm_task_fn task, const void *in_data, long long in_length, MPI_Datatype in_type,
                    void *out_data, long long out_length, MPI_Datatype out_type, MPI_Comm comm,
                    const pfarm_options *options, pfarm_result *result);

/** Farms `task` over the index range first..first+count-1, with no input array: the task function gets the
 *  absolute index, `in` NULL, and writes out_length / count elements of out_type at out_data block
 *  (index - first) on rank 0. count >= 1; first may be any value whose last index first + count - 1 fits a
 *  long long (first > 2^31 is fine). first, count, out_data and out_length are rank 0's (the other ranks' are not
 *  read). Returns a pfarm_status_code; `result` may be NULL. */
int pfarm_run_range(pfarm_task_fn task, long long first, long long count, void *out_data, long long out_length,
                    MPI_Datatype out_type, MPI_Comm comm, const pfarm_options *options, pfarm_result *result);

/** Called by a worker function to fail its task with a message: the farm stops and every rank's pfarm call
 *  returns PFARM_ERROR_WORKER naming the task. */
void pfarm_fail_task(const char *message);

int pfarm_status(void);               /**< the status of this thread's last call */
/** Its message ("" when PFARM_OK). With PFARM_ERROR_ARGUMENT it starts with the argument's C name and ": ",
 *  then what is wrong and the accepted range ("min_chunk: is 0; expected >= 1"): a parameter of pfarm_run,
 *  pfarm_run_tasks, pfarm_run_range or pfarm ("worker", "task", "in_length", "in_data", "in_type", "first",
 *  "count", "out_data", "out_length", "out_type", "comm", "sched", and "options" for an options struct whose
 *  `size` is not one this library knows), a field of pfarm_options by its name within its group ("technique", "min_chunk", "chunk",
 *  "factor", "first", "last", "stages", "static_percent", "k", "weights", "calibration", "trace", "journal", "farmer", "masters",
 *  "master_technique", "farmer_computes", "on_task_error", "on_worker_loss"), or the
 *  environment variable a value came from ("PFARM_SLOWDOWN", "PFARM_LOAD_CHANGES"). pfarm_run_range's parameter
 *  `first` and the tss field `first` share a name; the message tells them apart. These are the C++ API's names
 *  of the same arguments (technique_options, farm_options), except in_length and out_length, which the C++
 *  farm() calls "in" and "out"; never a command-line flag.
 *  Bad arguments are found on the rank that passed them and agreed on collectively before the farm starts, so
 *  every rank returns PFARM_ERROR_ARGUMENT with the same message (the lowest such rank's), never a hang: a
 *  function, datatype or options size wrong on any one rank, or a datatype whose size differs from rank 0's. */
const char *pfarm_error_message(void);
/** With on_task_error "skip", on rank 0: how many tasks of this thread's last call failed and were skipped (their
 *  outputs left zero bytes); 0 on the other ranks and after any other call. */
long long pfarm_failed_count(void);
/** The k-th of them (0 <= k < pfarm_failed_count()), by increasing index: its index as the task function received
 *  it (for pfarm_run_range the absolute index); -1 when k is out of range. */
long long pfarm_failed_task(long long k);
/** The k-th's error message (what it passed to pfarm_fail_task); "" when k is out of range. */
const char *pfarm_failed_error(long long k);
/** With on_worker_loss "continue", on rank 0: how many worker ranks of this thread's last call were presumed lost
 *  (their tasks computed by the others); 0 on the other ranks and after any other call. */
int pfarm_lost_count(void);
/** The k-th of them (0 <= k < pfarm_lost_count()), in the order they were lost: its rank; -1 when k is out of range. */
int pfarm_lost_rank(int k);
/** MPI_Finalize, unless a farm of this process lost worker ranks (on_worker_loss): under Open MPI's recovery mode
 *  MPI_Finalize can then wait forever for the dead rank; the process ends without it. Call it instead of
 *  MPI_Finalize in a program that may lose ranks. */
int pfarm_finalize(void);
/** With PFARM_ERROR_WORKER, the failed task's index as the task function received it (for pfarm_run_range the
 *  absolute index, first + ...); else -1. */
long long pfarm_error_task(void);

#ifdef __cplusplus
}
#endif

#endif /* PFARM_H */
