/* The C API's indexed tasks from C (pfarm_run_tasks, pfarm_run_range): the index each task receives,
 * each rank's own user_data reaching every call, 64-bit ranges, every path of the engine without input (farmer
 * computes, prefetch, reclaim, replicated input, one rank), and bad arguments, including those wrong on one
 * non-zero rank only, returning PFARM_ERROR_ARGUMENT on every rank. Runs on any number of ranks (1 and 3 in
 * CMake); the checks that need a second rank are skipped on one. */
#include <pfarm.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
static int rank = 0, ranks = 1;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            ++failures;                                                        \
            fprintf(stderr, "[rank %d] %s:%d: ", rank, __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
        }                                                                      \
    } while (0)

/* What each rank hands its task function through user_data. */
typedef struct counter {
    int rank;             /* the rank that owns it: a call on another rank would see another value */
    long long calls;      /* calls of the task function on this rank */
    long long wrong;      /* calls that saw something they should not (a foreign counter, in != NULL for a range) */
    long long first, last; /* the range's indices: first..last */
    double sleep;         /* seconds each task takes (0: none) */
} counter;

static void sleep_for(double seconds) {
    struct timespec t = {0, (long)(seconds * 1e9)};
    nanosleep(&t, NULL);
}

/* A range task: two outputs, the index and its negation, as long long. */
static void range_task(long long index, const void *in, void *out, void *user_data) {
    counter *c = (counter *)user_data;
    if (c->rank != rank || in != NULL || index < c->first || index > c->last) ++c->wrong;
    ++c->calls;
    if (c->sleep > 0) sleep_for(c->sleep);
    ((long long *)out)[0] = index;
    ((long long *)out)[1] = -index;
}

/* An input task: out = {in * 2, index}. */
static void input_task(long long index, const void *in, void *out, void *user_data) {
    counter *c = (counter *)user_data;
    if (c->rank != rank || in == NULL || index < 0 || index > c->last) ++c->wrong;
    ++c->calls;
    ((double *)out)[0] = *(const double *)in * 2.0;
    ((double *)out)[1] = (double)index;
}

/* pfarm_run's task function (no index, no user_data). */
static void twice(const void *in, void *out) { *(double *)out = 2.0 * *(const double *)in; }

/* Without options: user_data is NULL. */
static void no_user_data(long long index, const void *in, void *out, void *user_data) {
    (void)in;
    *(long long *)out = user_data == NULL ? index : -1;
}

static void fails_at_first_plus_7(long long index, const void *in, void *out, void *user_data) {
    const counter *c = (const counter *)user_data;
    (void)in;
    if (index == c->first + 7) pfarm_fail_task("seven past first");
    *(long long *)out = index;
}

/* The sum over ranks of this rank's calls, and whether any rank saw something wrong (on rank 0). */
static void totals(const counter *c, long long *calls, long long *wrong) {
    MPI_Reduce(&c->calls, calls, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&c->wrong, wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
}

/* pfarm_error_message() starts with the argument's C name (pfarm.h), on every rank. */
static int names(const char *argument) {
    const size_t length = strlen(argument);
    const char *message = pfarm_error_message();
    if (strncmp(message, argument, length) == 0 && message[length] == ':') return 1;
    fprintf(stderr, "[rank %d] expected a message naming %s: %s\n", rank, argument, message);
    return 0;
}

/* The status is PFARM_ERROR_ARGUMENT naming `argument` on this rank, and every rank has the same message. */
static void expect_argument_error(int status, const char *argument, const char *what) {
    char mine[256], rank0[256];
    CHECK(status == PFARM_ERROR_ARGUMENT && names(argument), "%s: status %d, message '%s'", what, status,
          pfarm_error_message());
    snprintf(mine, sizeof mine, "%s", pfarm_error_message());
    memcpy(rank0, mine, sizeof mine);
    MPI_Bcast(rank0, (int)sizeof rank0, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECK(strcmp(mine, rank0) == 0, "%s: message '%s' differs from rank 0's '%s'", what, mine, rank0);
}

static const char *const techniques[] = {"ss", "gss", "multi", "awf-b", "fss", "static"};
enum { technique_count = sizeof techniques / sizeof techniques[0] };

/* The engine's paths, each with every technique. */
typedef struct path {
    const char *name;
    int farmer_computes, prefetch, reclaim, replicated_input;
} path;
static const path paths[] = {
    {"plain", 0, 0, 0, 0},           {"farmer_computes", 1, 0, 0, 0},
    {"prefetch", 0, 1, 0, 0},        {"reclaim", 0, 0, 1, 0},
    {"prefetch+reclaim", 0, 1, 1, 0}, {"replicated_input", 0, 0, 0, 1},
    {"all", 1, 1, 1, 1},
};
enum { path_count = sizeof paths / sizeof paths[0] };

static void options_for(pfarm_options *o, const char *technique, const path *p, counter *c) {
    pfarm_options_init(o);
    o->schedule.technique = technique;
    o->topology.farmer_computes = p->farmer_computes;
    o->protocol.prefetch = p->prefetch;
    o->protocol.reclaim = p->reclaim;
    o->protocol.replicated_input = p->replicated_input;
    o->user_data = c;
}

/* pfarm_run_range over [first, first + n): out[2i] = first + i, out[2i+1] = -(first + i); the calls on every rank
 * sum to n, each rank sees its own counter, and rank 0 computes nothing unless it is a farmer that computes. */
static void check_range(const char *technique, const path *p, long long first, long long n) {
    long long *out = rank == 0 ? malloc((size_t)(2 * n) * sizeof *out) : NULL; /* the workers pass NULL */
    counter c = {rank, 0, 0, first, first + (n - 1), 0.0};
    pfarm_options o;
    pfarm_result r;
    long long calls = 0, wrong = 0;
    options_for(&o, technique, p, &c);
    for (long long i = 0; rank == 0 && i < 2 * n; ++i) out[i] = LLONG_MIN;
    const int status = pfarm_run_range(range_task, first, n, out, 2 * n, MPI_LONG_LONG, MPI_COMM_WORLD, &o, &r);
    CHECK(status == PFARM_OK, "range %s/%s first %lld: %s", technique, p->name, first, pfarm_error_message());
    totals(&c, &calls, &wrong);
    if (rank == 0) {
        long long bad = 0;
        for (long long i = 0; i < n; ++i) bad += out[2 * i] != first + i || out[2 * i + 1] != -(first + i);
        CHECK(bad == 0, "range %s/%s first %lld: %lld wrong outputs", technique, p->name, first, bad);
        CHECK(calls == n, "range %s/%s: %lld calls for %lld tasks", technique, p->name, calls, n);
        CHECK(wrong == 0, "range %s/%s: %lld calls saw a foreign user_data, an input or an index out of range",
              technique, p->name, wrong);
        CHECK(ranks == 1 || p->farmer_computes || c.calls == 0, "range %s/%s: the farmer computed %lld tasks",
              technique, p->name, c.calls);
        CHECK(r.ranks == ranks && r.sequential == (ranks == 1), "range %s/%s: result says %d ranks, sequential %d",
              technique, p->name, r.ranks, r.sequential);
    }
    free(out);
}

/* pfarm_run_tasks over n doubles: out[2i] = 2 in[i], out[2i+1] = i. With replicated input every rank holds it;
 * otherwise only rank 0 does (the workers pass NULL). */
static void check_tasks(const char *technique, const path *p, long long n) {
    double *in = rank == 0 || p->replicated_input ? malloc((size_t)n * sizeof *in) : NULL;
    double *out = rank == 0 ? malloc((size_t)(2 * n) * sizeof *out) : NULL;
    counter c = {rank, 0, 0, 0, n - 1, 0.0};
    pfarm_options o;
    long long calls = 0, wrong = 0;
    options_for(&o, technique, p, &c);
    for (long long i = 0; in && i < n; ++i) in[i] = 0.5 * (double)i + 1.0;
    for (long long i = 0; rank == 0 && i < 2 * n; ++i) out[i] = -1.0;
    const int status = pfarm_run_tasks(input_task, in, n, MPI_DOUBLE, out, 2 * n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL);
    CHECK(status == PFARM_OK, "tasks %s/%s: %s", technique, p->name, pfarm_error_message());
    totals(&c, &calls, &wrong);
    if (rank == 0) {
        long long bad = 0;
        for (long long i = 0; i < n; ++i) bad += out[2 * i] != 2.0 * in[i] || out[2 * i + 1] != (double)i;
        CHECK(bad == 0, "tasks %s/%s: %lld wrong outputs", technique, p->name, bad);
        CHECK(calls == n, "tasks %s/%s: %lld calls for %lld tasks", technique, p->name, calls, n);
        CHECK(wrong == 0, "tasks %s/%s: %lld calls saw a foreign user_data, no input or a bad index", technique,
              p->name, wrong);
    }
    free(in);
    free(out);
}

/* Reclaim really moves tasks of a range (no input): "static" gives each of 2 workers half, the last rank is
 * 8 times slower (PFARM_SLOWDOWN), and with reclaim it ends up computing less than its half. 3 ranks only. */
static void check_range_reclaim_moves(int prefetch) {
    const long long n = 120, first = 3000000000LL;
    long long *out = rank == 0 ? malloc((size_t)(2 * n) * sizeof *out) : NULL;
    counter c = {rank, 0, 0, first, first + (n - 1), 3e-4};
    pfarm_options o;
    const path p = {"reclaim", 0, prefetch, 1, 0};
    long long calls = 0, wrong = 0;
    options_for(&o, "static", &p, &c);
    setenv("PFARM_SLOWDOWN", "1,1,8", 1);
    const int status = pfarm_run_range(range_task, first, n, out, 2 * n, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL);
    unsetenv("PFARM_SLOWDOWN");
    CHECK(status == PFARM_OK, "reclaim (prefetch %d): %s", prefetch, pfarm_error_message());
    totals(&c, &calls, &wrong);
    long long slow = c.calls;
    MPI_Bcast(&slow, 1, MPI_LONG_LONG, 2, MPI_COMM_WORLD);
    if (rank == 0) {
        long long bad = 0;
        for (long long i = 0; i < n; ++i) bad += out[2 * i] != first + i || out[2 * i + 1] != -(first + i);
        CHECK(bad == 0 && calls == n && wrong == 0, "reclaim (prefetch %d): %lld wrong outputs, %lld calls, %lld wrong",
              prefetch, bad, calls, wrong);
        fprintf(stderr, "range reclaim (prefetch %d): the slow rank computed %lld of its %lld static tasks\n", prefetch,
                slow, n / 2);
        CHECK(slow < n / 2, "reclaim (prefetch %d): the slow rank computed %lld of its %lld static tasks: nothing moved",
              prefetch, slow, n / 2);
    }
    free(out);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const long long big = (1LL << 32) + 5; /* past what an int holds */

    /* Every technique on every path, from 0 and from past 2^32, with and without input. */
    for (int t = 0; t < technique_count; ++t)
        for (int p = 0; p < path_count; ++p) {
            check_range(techniques[t], &paths[p], t % 2 ? big : 0, 97);
            check_tasks(techniques[t], &paths[p], 89);
        }
    /* Negative indices are indices too, and a range whose last index is LLONG_MAX. */
    check_range("gss", &paths[0], -40, 81);
    check_range("ss", &paths[2], LLONG_MAX - 9, 10);
    check_range("multi", &paths[0], 7, 1);
    if (ranks == 3) {
        check_range_reclaim_moves(0);
        check_range_reclaim_moves(1);
    }

    /* A journal: the second run of the same range restores every output and computes none. */
    {
        long long out[2 * 60];
        for (int pass = 0; pass < 2; ++pass) {
            counter c = {rank, 0, 0, 300, 359, 0.0};
            pfarm_options o;
            long long calls = 0, wrong = 0;
            options_for(&o, "gss", &paths[0], &c);
            o.resume.journal = "pfarm-test-c-journal";
            if (pass == 0 && rank == 0) remove(o.resume.journal);
            for (int i = 0; i < 120; ++i) out[i] = 0;
            const int status = pfarm_run_range(range_task, 300, 60, out, 120, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL);
            CHECK(status == PFARM_OK, "journal pass %d: %s", pass, pfarm_error_message());
            totals(&c, &calls, &wrong);
            for (int i = 0; rank == 0 && i < 60; ++i) CHECK(out[2 * i] == 300 + i, "journal pass %d: out[%d] = %lld", pass, 2 * i, out[2 * i]);
            if (rank == 0) CHECK(calls == (pass == 0 ? 60 : 0), "journal pass %d: %lld calls", pass, calls);
        }
    }

    /* The farmer mode: decentralised farms the range; an unknown name is an error naming "farmer". */
    {
        long long out[2 * 40];
        counter c = {rank, 0, 0, 10, 49, 0.0};
        pfarm_options o;
        long long calls = 0, wrong = 0;
        options_for(&o, "gss", &paths[0], &c);
        o.topology.farmer = "decentralised";
        const int status = pfarm_run_range(range_task, 10, 40, out, 80, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL);
        CHECK(status == PFARM_OK, "decentralised: %s", pfarm_error_message());
        totals(&c, &calls, &wrong);
        for (int i = 0; rank == 0 && i < 40; ++i) CHECK(out[2 * i] == 10 + i, "decentralised: out[%d] = %lld", 2 * i, out[2 * i]);
        if (rank == 0) CHECK(calls == 40, "decentralised: %lld calls", calls);
        o.topology.farmer = "central";
        expect_argument_error(pfarm_run_range(range_task, 10, 40, out, 80, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL), "farmer",
                              "an unknown farmer mode");
    }

    /* NULL options: defaults, and the task function gets NULL user_data. */
    {
        long long out[50];
        for (int i = 0; i < 50; ++i) out[i] = 0;
        const int status = pfarm_run_range(no_user_data, 100, 50, out, 50, MPI_LONG_LONG, MPI_COMM_WORLD, NULL, NULL);
        CHECK(status == PFARM_OK, "NULL options: %s", pfarm_error_message());
        for (int i = 0; rank == 0 && i < 50; ++i) CHECK(out[i] == 100 + i, "NULL options: out[%d] = %lld", i, out[i]);
    }

    /* A failing task of a range is named by its absolute index, on every rank. */
    {
        long long out[30];
        counter c = {rank, 0, 0, big, big + 29, 0.0};
        pfarm_options o;
        pfarm_options_init(&o);
        o.schedule.technique = "gss";
        o.user_data = &c;
        const int status = pfarm_run_range(fails_at_first_plus_7, big, 30, out, 30, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL);
        CHECK(status == PFARM_ERROR_WORKER, "a failing range task: status %d (%s)", status, pfarm_error_message());
        CHECK(pfarm_error_task() == big + 7, "the failed task is %lld, expected %lld", pfarm_error_task(), big + 7);
        CHECK(strstr(pfarm_error_message(), "seven past first") != NULL, "the message is lost: %s", pfarm_error_message());
    }

    /* on_task_error: "skip" goes on and lists the failed task by its absolute index, its outputs zero bytes;
     * "retry" runs it again and stops once its attempts are spent (it always fails here); a bad value names the field. */
    {
        long long out[30];
        counter c = {rank, 0, 0, big, big + 29, 0.0};
        pfarm_options o;
        pfarm_options_init(&o);
        o.schedule.technique = "gss";
        o.user_data = &c;
        o.protocol.on_task_error = "skip";
        for (int i = 0; i < 30; ++i) out[i] = -1;
        int status = pfarm_run_range(fails_at_first_plus_7, big, 30, out, 30, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL);
        CHECK(status == PFARM_OK, "skip: status %d (%s)", status, pfarm_error_message());
        if (rank == 0) {
            CHECK(pfarm_failed_count() == 1, "skip: %lld failed", pfarm_failed_count());
            CHECK(pfarm_failed_task(0) == big + 7, "skip: failed task %lld", pfarm_failed_task(0));
            CHECK(strcmp(pfarm_failed_error(0), "seven past first") == 0, "skip: error '%s'", pfarm_failed_error(0));
            CHECK(pfarm_failed_task(1) == -1 && strcmp(pfarm_failed_error(-1), "") == 0, "skip: out of range");
            for (int i = 0; i < 30; ++i)
                CHECK(out[i] == (i == 7 ? 0 : big + i), "skip: out[%d] = %lld", i, out[i]);
        }
        o.protocol.on_task_error = "retry=2";
        status = pfarm_run_range(fails_at_first_plus_7, big, 30, out, 30, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL);
        CHECK(status == PFARM_ERROR_WORKER && pfarm_error_task() == big + 7, "retry: status %d, task %lld", status,
              pfarm_error_task());
        CHECK(strstr(pfarm_error_message(), "seven past first") != NULL, "retry: message %s", pfarm_error_message());
        CHECK(pfarm_failed_count() == 0, "retry: %lld listed failed", pfarm_failed_count());
        o.protocol.on_task_error = "retry=1";
        expect_argument_error(pfarm_run_range(fails_at_first_plus_7, big, 30, out, 30, MPI_LONG_LONG, MPI_COMM_WORLD, &o,
                                              NULL),
                              "on_task_error", "retry=1");
        o.protocol.on_task_error = "ignore";
        expect_argument_error(pfarm_run_range(fails_at_first_plus_7, big, 30, out, 30, MPI_LONG_LONG, MPI_COMM_WORLD, &o,
                                              NULL),
                              "on_task_error", "an unknown on_task_error");
    }

    /* Bad arguments: PFARM_ERROR_ARGUMENT naming the argument, the same message on every rank, no hang. */
    {
        enum { n = 20 };
        long long out[2 * n];
        double in[n], dout[n];
        counter c = {rank, 0, 0, 0, n - 1, 0.0};
        pfarm_options o;
        pfarm_options_init(&o);
        o.user_data = &c;
        for (int i = 0; i < n; ++i) in[i] = i;
        expect_argument_error(pfarm_run_range(NULL, 0, n, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL), "task",
                              "NULL task");
        expect_argument_error(pfarm_run_range(range_task, 0, 0, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL), "count",
                              "count 0");
        expect_argument_error(pfarm_run_range(range_task, 0, -3, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL), "count",
                              "negative count");
        expect_argument_error(pfarm_run_range(range_task, 0, n, rank == 0 ? NULL : out, 2 * n, MPI_LONG_LONG,
                                              MPI_COMM_WORLD, &o, NULL),
                              "out_data", "NULL out_data on rank 0");
        expect_argument_error(pfarm_run_range(range_task, 0, n, out, 2 * n + 1, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL),
                              "out_length", "out_length not a multiple of count");
        expect_argument_error(pfarm_run_range(range_task, 0, n, out, 0, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL),
                              "out_length", "out_length 0");
        expect_argument_error(pfarm_run_range(range_task, LLONG_MAX - 5, n, out, 2 * n, MPI_LONG_LONG, MPI_COMM_WORLD, &o,
                                              NULL),
                              "first", "first + count - 1 past LLONG_MAX");
        expect_argument_error(pfarm_run_range(range_task, 0, n, out, 2 * n, MPI_DATATYPE_NULL, MPI_COMM_WORLD, &o, NULL),
                              "out_type", "MPI_DATATYPE_NULL out_type");
        expect_argument_error(pfarm_run_tasks(input_task, in, -1, MPI_DOUBLE, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &o,
                                              NULL),
                              "in_length", "negative in_length");
        expect_argument_error(pfarm_run_tasks(input_task, rank == 0 ? NULL : in, n, MPI_DOUBLE, out, n, MPI_LONG_LONG,
                                              MPI_COMM_WORLD, &o, NULL),
                              "in_data", "NULL in_data on rank 0");
        expect_argument_error(pfarm_run_tasks(NULL, in, n, MPI_DOUBLE, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL),
                              "task", "NULL task to pfarm_run_tasks");

        /* Options whose size this library does not know: forgotten pfarm_options_init (0), garbage. */
        {
            pfarm_options raw;
            memset(&raw, 0, sizeof raw);
            expect_argument_error(pfarm_run_range(range_task, 0, n, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &raw, NULL),
                                  "options", "options without pfarm_options_init");
            raw.size = sizeof raw + 8;
            expect_argument_error(pfarm_run_tasks(input_task, in, n, MPI_DOUBLE, out, n, MPI_LONG_LONG, MPI_COMM_WORLD,
                                                  &raw, NULL),
                                  "options", "options of another size");
            /* Initialised for a struct of another size (an older or newer header): recorded, then reported. */
            pfarm_options_init_size(&raw, sizeof raw - sizeof(double));
            CHECK(raw.size == sizeof raw - sizeof(double), "pfarm_options_init_size did not record the size");
            expect_argument_error(pfarm_run_range(range_task, 0, n, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &raw, NULL),
                                  "options", "options initialised for another header's size");
            /* The function behind the macro gives the library's size, which works. */
            (pfarm_options_init)(&raw);
            raw.user_data = &c;
            CHECK(pfarm_run_range(range_task, 0, n, out, n, MPI_LONG_LONG, MPI_COMM_WORLD, &raw, NULL) == PFARM_OK,
                  "(pfarm_options_init)(): %s", pfarm_error_message());
            raw.size = 0;
            expect_argument_error(pfarm_run(twice, in, n, MPI_DOUBLE, dout, n, MPI_DOUBLE, MPI_COMM_WORLD, &raw, NULL),
                                  "options", "pfarm_run with options without pfarm_options_init");
        }

        /* Wrong on one non-zero rank only (the last): every rank returns the error, nobody hangs. */
        if (ranks > 1) {
            const int odd = ranks - 1;
            pfarm_options bad = o;
            bad.size = rank == odd ? 0 : o.size;
            expect_argument_error(pfarm_run_range(range_task, 0, n, out, 2 * n, MPI_LONG_LONG, MPI_COMM_WORLD, &bad, NULL),
                                  "options", "options size 0 on the last rank only");
            bad.size = rank == odd ? (size_t)0xdeadbeef : o.size;
            expect_argument_error(pfarm_run_tasks(input_task, in, n, MPI_DOUBLE, out, 2 * n, MPI_LONG_LONG,
                                                  MPI_COMM_WORLD, &bad, NULL),
                                  "options", "garbage options size on the last rank only");
            expect_argument_error(pfarm_run_range(rank == odd ? NULL : range_task, 0, n, out, 2 * n, MPI_LONG_LONG,
                                                  MPI_COMM_WORLD, &o, NULL),
                                  "task", "NULL task on the last rank only");
            expect_argument_error(pfarm_run_range(range_task, 0, n, out, 2 * n, rank == odd ? MPI_INT : MPI_LONG_LONG,
                                                  MPI_COMM_WORLD, &o, NULL),
                                  "out_type", "an out_type of another size on the last rank only");
            expect_argument_error(pfarm_run_tasks(input_task, in, n, rank == odd ? MPI_FLOAT : MPI_DOUBLE, out, 2 * n,
                                                  MPI_LONG_LONG, MPI_COMM_WORLD, &o, NULL),
                                  "in_type", "an in_type of another size on the last rank only");
            bad = o;
            bad.schedule.calibration = rank == odd ? "sometimes" : NULL;
            expect_argument_error(pfarm_run_range(range_task, 0, n, out, 2 * n, MPI_LONG_LONG, MPI_COMM_WORLD, &bad, NULL),
                                  "calibration", "an unknown calibration on the last rank only");
            /* pfarm_run checks every rank's size too. */
            bad = o;
            bad.size = rank == odd ? 0 : o.size;
            expect_argument_error(pfarm_run(twice, in, n, MPI_DOUBLE, dout, n, MPI_DOUBLE, MPI_COMM_WORLD, &bad, NULL),
                                  "options", "pfarm_run: options size 0 on the last rank only");
            /* Several ranks wrong: the lowest one's verdict, here rank 0's NULL task. */
            expect_argument_error(pfarm_run_range(rank == 0 ? NULL : range_task, 0, n, out, 2 * n, MPI_LONG_LONG,
                                                  MPI_COMM_WORLD, &bad, NULL),
                                  "task", "rank 0's NULL task before the last rank's options");
        }
        /* After all that, a good call still works: nothing was left half-agreed. */
        check_range("gss", &paths[0], 11, 40);
    }

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("c tasks: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
