/* pfarm: the C API of the task farm (seed 004, Fig. 5), usable from C and C++.
 *
 *   void square(const void *in, void *out) { *(double *)out = *(const double *)in * *(const double *)in; }
 *   pfarm(square, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, SCH_MULTI);
 *   if (pfarm_status() != PFARM_OK) fprintf(stderr, "%s\n", pfarm_error_message());
 *
 * Every rank calls pfarm collectively; only rank 0's buffers are used (all ranks' with replicated input).
 * One call of the worker computes one task: it reads one input element and writes out_length / in_length
 * output elements. Elements travel as their bytes: datatypes must be contiguous (extent == size).
 * The C API never throws: failures come back as a status and a message. */
#ifndef PFARM_H
#define PFARM_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The six scheduling modes of seed 004, Table 2. */
enum scheduling {
    SCH_TRAD,       /**< work queue, one task per request (technique "ss") */
    SCH_DEAL,       /**< isometric single round ("deal") */
    SCH_DEALDYN_LR, /**< single round, F from univariate statistical calibration ("dealdyn-lr") */
    SCH_DEALDYN_MV, /**< single round, F from multivariate statistical calibration ("dealdyn-mv") */
    SCH_DEALDYN_SM, /**< single round, F from times-only calibration ("dealdyn-sm") */
    SCH_MULTI       /**< adaptive multi-round, k = ln(S)^CV ("multi") */
};

/** One task: reads one input element, writes out_length / in_length output elements. */
typedef void (*pfarm_worker_fn)(const void *in, void *out);

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

/** Everything beyond the paper. Numeric parameters left at 0 (NULL for pointers) take the technique's default.
 *  Initialise with pfarm_options_init(). */
typedef struct pfarm_options {
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
    const char *trace;          /**< trace file, .csv or .json; NULL: none */
    int farmer_computes;        /**< rank 0 computes too */
    int prefetch;               /**< workers ask for the next chunk before computing the current one */
    int replicated_input;       /**< every rank holds the input: only indices travel */
    int progress;               /**< 0 quiet, 1 plain lines, 2 a bar on a terminal */
    int reclaim;                /**< work take-back at the end of the loop (with or without prefetch) */
} pfarm_options;

/** Sets every field to its default. */
void pfarm_options_init(pfarm_options *options);

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

/** Called by a worker function to fail its task with a message: the farm stops and every rank's pfarm call
 *  returns PFARM_ERROR_WORKER naming the task. */
void pfarm_fail_task(const char *message);

int pfarm_status(void);               /**< the status of this thread's last call */
/** Its message ("" when PFARM_OK). With PFARM_ERROR_ARGUMENT it starts with the argument's C name and ": ",
 *  then what is wrong and the accepted range ("min_chunk: is 0; expected >= 1"): a parameter of pfarm_run or
 *  pfarm ("worker", "in_length", "in_data", "in_type", "out_length", "sched"), a field of pfarm_options
 *  ("technique", "min_chunk", "chunk", "factor", "first", "last", "stages", "static_percent", "k", "weights",
 *  "calibration", "trace"), or the environment variable a value came from ("PFARM_SLOWDOWN",
 *  "PFARM_LOAD_CHANGES"). These are the C++ API's names of the same arguments (technique_options, farm_options),
 *  except in_length and out_length, which the C++ farm() calls "in" and "out"; never a command-line flag. */
const char *pfarm_error_message(void);
long long pfarm_error_task(void);      /**< the failed task with PFARM_ERROR_WORKER, else -1 */

#ifdef __cplusplus
}
#endif

#endif /* PFARM_H */
