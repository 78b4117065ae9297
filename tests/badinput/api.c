/* Bad input through the C API (docs/reliability.md "Bad input"), under mpiexec. The cases
 * are the table in main(): each calls pfarm_run, pfarm_run_tasks or pfarm_run_range collectively on every rank
 * with one thing wrong and states the status every rank must get and the C name its message must start with
 * ("min_chunk: ..."); the message must be the same on every rank. Output and journal files must be left as they
 * were (a refused journal untouched, no trace written). Cases the C API's other tests already cover (NULL
 * buffers, lengths, datatypes, options sizes, an argument wrong on one rank only: tests/mpi/test_c_api.c and
 * test_c_tasks.c) are not repeated here.
 *
 *   pfarm_badinput_c table WORKDIR    every case (any number of ranks)
 *   pfarm_badinput_c worker-exit      a task on a worker rank calls exit(3) in the middle of a farm
 *   pfarm_badinput_c worker-abort     ... abort() */
#include <pfarm.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int rank = 0, ranks = 1, failures = 0, cases = 0, passed = 0;
static char work[4096];

static const char *in_work(const char *name) {
    static char paths[8][4352];
    static int next = 0;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", work, name);
    return p;
}

/* A file's bytes (at most 4 KiB) and whether it exists: what a case must leave as it was. */
typedef struct file_state {
    int exists;
    size_t size;
    char bytes[4096];
} file_state;

static void state_of(const char *path, file_state *s) {
    FILE *f = fopen(path, "rb");
    memset(s, 0, sizeof *s);
    if (!f) return;
    s->exists = 1;
    s->size = fread(s->bytes, 1, sizeof s->bytes, f);
    fclose(f);
}

static void spit(const char *name, const char *bytes, size_t size) {
    FILE *f = fopen(in_work(name), "wb");
    if (!f || fwrite(bytes, 1, size, f) != size) {
        fprintf(stderr, "cannot write the fixture %s\n", name);
        exit(1);
    }
    fclose(f);
}

static void make_fixtures(void) {
    char binary[256];
    char command[8500];
    for (int i = 0; i < 256; ++i) binary[i] = (char)i;
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s/folder'", work, work);
    if (system(command) != 0) {
        fprintf(stderr, "cannot make %s\n", work);
        exit(1);
    }
    spit("garbage.journal", "hello, world\nhow are you\n", 25);
    spit("binary.journal", binary, sizeof binary);
    spit("a-file", "not a folder\n", 13);
}

static void square(const void *in, void *out) { *(double *)out = *(const double *)in * *(const double *)in; }
static void index_task(long long index, const void *in, void *out, void *user_data) {
    (void)in, (void)user_data;
    *(double *)out = (double)index;
}
static void fails_with_null(long long index, const void *in, void *out, void *user_data) {
    (void)in, (void)user_data;
    if (index == 4) pfarm_fail_task(NULL);
    *(double *)out = 1.0;
}

enum { n = 24 };
static double in[n], out[n];

/* Checks one case on every rank: the status, the message's leading C name (argument; NULL: any message), the same
 * message everywhere, and the files under watch (watched, NULL-terminated) as they were. */
static void expect(const char *name, int status, int expected, const char *argument, const char *const *watched,
                   const file_state *before) {
    const char *message = pfarm_error_message();
    int right = status == expected;
    if (argument) {
        const size_t length = strlen(argument);
        right = right && strncmp(message, argument, length) == 0 && message[length] == ':';
    }
    /* The same message on every rank: compare a hash of it. */
    unsigned long long h = 1469598103934665603ULL, lowest = 0, highest = 0;
    for (const char *c = message; *c; ++c) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    MPI_Allreduce(&h, &lowest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &highest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    right = right && lowest == highest;
    int untouched = 1;
    if (rank == 0)
        for (int i = 0; watched && watched[i]; ++i) {
            file_state after;
            state_of(watched[i], &after);
            if (after.exists != before[i].exists || after.size != before[i].size ||
                memcmp(after.bytes, before[i].bytes, after.size) != 0) {
                untouched = 0;
                fprintf(stderr, "[rank 0] %s: '%s' changed\n", name, watched[i]);
            }
        }
    int mine = right && untouched, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!right) {
        ++failures;
        fprintf(stderr, "[rank %d] %s: status %d, message '%s'; expected status %d naming '%s'\n", rank, name, status,
                message, expected, argument ? argument : "(any)");
    }
    if (!untouched) ++failures;
    ++cases;
    passed += all == ranks;
    if (rank == 0) {
        printf("case %-32s %-4s status %d: %s\n", name, all == ranks ? "ok" : "FAIL", status, message);
        fflush(stdout);
    }
}

/* Runs one pfarm_run of the n squares with `o` and expects PFARM_ERROR_ARGUMENT naming `argument`, the files of
 * `watched` untouched. */
static void options_case(const char *name, const pfarm_options *o, const char *argument, const char *const *watched) {
    file_state before[4];
    for (int i = 0; rank == 0 && watched && watched[i]; ++i) state_of(watched[i], &before[i]);
    const int status = pfarm_run(square, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, o, NULL);
    expect(name, status, PFARM_ERROR_ARGUMENT, argument, watched, before);
}

static int table(void) {
    pfarm_options o;
    const int workers = ranks == 1 ? 1 : ranks - 1;
    double weights[64];
    for (int i = 0; i < n; ++i) in[i] = i;
    for (int i = 0; i < 64; ++i) weights[i] = 1.0;
    if (rank == 0) make_fixtures();
    MPI_Barrier(MPI_COMM_WORLD);

#define FRESH(technique_name) (pfarm_options_init(&o), o.schedule.technique = (technique_name))
    /* Numbers: 0 is the default; negative, NaN and infinite values are errors naming the field. */
    FRESH("gss"), o.schedule.min_chunk = -1;
    options_case("min_chunk_negative", &o, "min_chunk", NULL);
    FRESH("css"), o.schedule.chunk = -5;
    options_case("chunk_negative", &o, "chunk", NULL);
    FRESH("fss"), o.schedule.factor = NAN;
    options_case("factor_nan", &o, "factor", NULL);
    FRESH("fss"), o.schedule.factor = -2.0;
    options_case("factor_negative", &o, "factor", NULL);
    FRESH("multi"), o.schedule.k = INFINITY;
    options_case("k_infinite", &o, "k", NULL);
    FRESH("fiss"), o.schedule.stages = -2;
    options_case("stages_negative", &o, "stages", NULL);
    FRESH("n-gss"), o.schedule.static_percent = NAN;
    options_case("static_percent_nan", &o, "static_percent", NULL);
    FRESH("multi"), o.schedule.calibration_span = NAN;
    options_case("calibration_span_nan", &o, "calibration_span", NULL);
    FRESH("af"), o.schedule.calibration_span = INFINITY;
    options_case("calibration_span_infinite", &o, "calibration_span", NULL);
    FRESH("tss"), o.schedule.first = -3;
    options_case("tss_first_negative", &o, "first", NULL);
    /* Weights: both pointer and count, or neither; one per worker; finite and > 0. */
    FRESH("dgss"), o.schedule.weight_count = workers;
    options_case("weights_null_with_a_count", &o, "weights", NULL);
    FRESH("dgss"), o.schedule.weights = weights, o.schedule.weight_count = -1;
    options_case("weight_count_negative", &o, "weights", NULL);
    FRESH("dgss"), o.schedule.weights = weights, o.schedule.weight_count = 0;
    options_case("weights_without_a_count", &o, "weights", NULL);
    FRESH("dgss"), o.schedule.weights = weights, o.schedule.weight_count = workers + 2;
    options_case("weights_wrong_count", &o, "weights", NULL);
    weights[0] = 0.0;
    FRESH("dgss"), o.schedule.weights = weights, o.schedule.weight_count = workers;
    options_case("weights_zero", &o, "weights", NULL);
    weights[0] = -1.0;
    options_case("weights_negative", &o, "weights", NULL);
    weights[0] = 1.0;
    /* Names and modes. */
    FRESH(""), (void)0;
    options_case("technique_empty", &o, "technique", NULL);
    FRESH("gss"), o.topology.farmer = "central";
    options_case("farmer_unknown", &o, "farmer", NULL);
    FRESH("gss"), o.topology.masters = -1;
    options_case("masters_negative", &o, "masters", NULL);
    FRESH("gss"), o.output.progress = 7;
    options_case("progress_out_of_range", &o, "progress", NULL);
    FRESH("gss"), o.loss.on_worker_loss = "sometimes";
    options_case("on_worker_loss_unknown", &o, "on_worker_loss", NULL);
    FRESH("gss"), o.loss.on_worker_loss = "continue=-2";
    options_case("on_worker_loss_negative_slack", &o, "on_worker_loss", NULL);
    FRESH("multi"), o.schedule.calibration = "";
    options_case("calibration_empty", &o, "calibration", NULL);
    /* Output paths. */
    {
        const char *watch_trace[] = {in_work("no-such/run.csv"), NULL};
        FRESH("gss"), o.output.trace = in_work("folder");
        options_case("trace_is_a_folder", &o, "trace", NULL);
        FRESH("gss"), o.output.trace = watch_trace[0];
        options_case("trace_in_a_missing_folder", &o, "trace", watch_trace);
        FRESH("gss"), o.output.trace = in_work("a-file/run.csv");
        options_case("trace_under_a_file", &o, "trace", NULL);
        struct stat st;
        if (stat("/dev/full", &st) == 0) {
            FRESH("gss"), o.output.trace = "/dev/full";
            options_case("trace_on_a_full_disk", &o, "trace", NULL);
        }
    }
    /* Journals: refused, and left as they were. */
    {
        const char *garbage[] = {in_work("garbage.journal"), NULL};
        const char *binary[] = {in_work("binary.journal"), NULL};
        FRESH("gss"), o.resume.journal = in_work("folder");
        options_case("journal_is_a_folder", &o, "journal", NULL);
        FRESH("gss"), o.resume.journal = garbage[0];
        options_case("journal_garbage", &o, "journal", garbage);
        FRESH("gss"), o.resume.journal = binary[0];
        options_case("journal_binary", &o, "journal", binary);
    }
    /* Lengths: a huge count refused without touching memory; the paper's int lengths at their limit. */
    {
        file_state none[1];
        FRESH("gss"), (void)0;
        expect("range_count_beyond_2_53",
               pfarm_run_range(index_task, 0, LLONG_MAX, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL),
               PFARM_ERROR_ARGUMENT, "count", NULL, none);
        expect("range_count_huge_for_its_outputs",
               pfarm_run_range(index_task, 0, 1LL << 50, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL),
               PFARM_ERROR_ARGUMENT, "out_length", NULL, none);
        expect("in_length_int_min",
               pfarm_run(square, in, INT_MIN, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL),
               PFARM_ERROR_ARGUMENT, "in_length", NULL, none);
        expect("worker_null", pfarm_run(NULL, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL),
               PFARM_ERROR_ARGUMENT, "worker", NULL, none);
        /* A task that fails without a message (NULL): PFARM_ERROR_WORKER naming task 4. */
        expect("fail_task_with_null_message",
               pfarm_run_range(fails_with_null, 0, n, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL), PFARM_ERROR_WORKER,
               NULL, NULL, none);
        if (pfarm_error_task() != 4) {
            ++failures;
            fprintf(stderr, "[rank %d] fail_task_with_null_message: task %lld, expected 4\n", rank, pfarm_error_task());
        }
        /* More workers than tasks: not an error. */
        expect("more_workers_than_tasks", pfarm_run(square, in, 1, MPI_DOUBLE, out, 1, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL),
               PFARM_OK, NULL, NULL, none);
    }
#undef FRESH
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("badinput api (C): %d of %d cases as expected on all %d ranks: %s\n", passed, cases, ranks,
                          total == 0 ? "ok" : "FAILED");
    return total == 0 ? 0 : 1;
}

static int dying_mode = 0; /* 1: exit, 2: abort */
static void dying_task(long long index, const void *in_, void *out_, void *user_data) {
    const struct timespec pause = {0, 5000000};
    (void)in_, (void)user_data;
    nanosleep(&pause, NULL);
    if (rank != 0 && index >= 5) {
        if (dying_mode == 2) abort();
        exit(3);
    }
    *(double *)out_ = 1.0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const char *mode = argc > 1 ? argv[1] : "table";
    int code = 2;
    if (strcmp(mode, "table") == 0 && argc > 2) {
        snprintf(work, sizeof work, "%s", argv[2]);
        code = table();
    } else if (strcmp(mode, "worker-exit") == 0 || strcmp(mode, "worker-abort") == 0) {
        pfarm_options o;
        pfarm_options_init(&o);
        o.schedule.technique = "ss";
        dying_mode = strcmp(mode, "worker-abort") == 0 ? 2 : 1;
        double results[40];
        pfarm_run_range(dying_task, 0, 40, results, 40, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL);
        code = 1; /* never here: a worker ended the job */
    } else if (rank == 0) {
        fprintf(stderr, "usage: %s table WORKDIR | worker-exit | worker-abort\n", argv[0]);
    }
    MPI_Finalize();
    return code;
}
