/* The C API from a C translation unit compiled as C: the six enum scheduling modes, pfarm_run with options,
 * the hierarchical farmer, a failing task, and bad arguments. */
#include <pfarm.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;
static int rank = 0;

#define CHECK(cond, what)                                                       \
    do {                                                                        \
        if (!(cond)) {                                                          \
            ++failures;                                                         \
            fprintf(stderr, "[rank %d] %s:%d: %s\n", rank, __FILE__, __LINE__, what); \
        }                                                                       \
    } while (0)

/* pfarm_error_message() starts with the argument's C name (pfarm.h), on every rank. */
static int names(const char *argument) {
    const size_t length = strlen(argument);
    const char *message = pfarm_error_message();
    if (strncmp(message, argument, length) == 0 && message[length] == ':') return 1;
    fprintf(stderr, "[rank %d] expected a message naming %s: %s\n", rank, argument, message);
    return 0;
}

static void cube(const void *in, void *out) {
    const double x = *(const double *)in;
    *(double *)out = x * x * x;
}

static void pair(const void *in, void *out) {
    const int x = *(const int *)in;
    ((int *)out)[0] = x;
    ((int *)out)[1] = -x;
}

static void fails_at_7(const void *in, void *out) {
    const int x = *(const int *)in;
    if (x == 7) pfarm_fail_task("seven is not allowed");
    *(int *)out = x;
}

int main(int argc, char **argv) {
    enum { n = 64 };
    double in[n], out[n];
    int iin[n], iout[2 * n];
    const enum scheduling modes[] = {SCH_TRAD, SCH_DEAL, SCH_DEALDYN_LR, SCH_DEALDYN_MV, SCH_DEALDYN_SM, SCH_MULTI,
                                     SCH_AUTO};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < n; ++i) in[i] = i * 0.5, iin[i] = i;

    for (int m = 0; m < 7; ++m) {
        memset(out, 0, sizeof out);
        pfarm(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, modes[m]);
        if (pfarm_status() != PFARM_OK) fprintf(stderr, "mode %d: %s\n", m, pfarm_error_message());
        CHECK(pfarm_status() == PFARM_OK, "an enum scheduling mode failed");
        if (rank == 0)
            for (int i = 0; i < n; ++i) CHECK(out[i] == in[i] * in[i] * in[i], "wrong output");
    }

    pfarm_options o;
    pfarm_options_init(&o);
    o.schedule.technique = "gss";
    o.schedule.min_chunk = 3;
    o.protocol.prefetch = 1;
    pfarm_result r;
    CHECK(pfarm_run(pair, iin, n, MPI_INT, iout, 2 * n, MPI_INT, MPI_COMM_WORLD, &o, &r) == PFARM_OK, "pfarm_run");
    if (rank == 0) {
        for (int i = 0; i < n; ++i) CHECK(iout[2 * i] == i && iout[2 * i + 1] == -i, "two outputs per task");
        CHECK(r.makespan > 0.0, "makespan");
    }

    /* Reclaim from C, without and with prefetch: outputs in place. */
    o.schedule.technique = "static";
    o.protocol.reclaim = 1;
    for (int prefetch = 0; prefetch <= 1; ++prefetch) {
        o.protocol.prefetch = prefetch;
        for (int i = 0; i < n; ++i) out[i] = -1.0;
        CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, &r) == PFARM_OK, "reclaim run");
        if (rank == 0)
            for (int i = 0; i < n; ++i) CHECK(out[i] == in[i] * in[i] * in[i], "wrong output with reclaim");
    }
    o.protocol.prefetch = 0;
    o.protocol.reclaim = 0;

    /* The hierarchical farmer from C (3 ranks: rank 0 the supermaster, one master per node: rank 1, worker rank 2),
     * with the supermaster's own technique, and with farmer_computes (every rank computes); then a failing task. */
    o.schedule.technique = "ss";
    o.topology.farmer = "hierarchical";
    o.topology.master_technique = "gss";
    o.protocol.reclaim = 1;
    for (int i = 0; i < n; ++i) out[i] = -1.0;
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, &r) == PFARM_OK, "hierarchical run");
    if (rank == 0)
        for (int i = 0; i < n; ++i) CHECK(out[i] == in[i] * in[i] * in[i], "wrong output, hierarchical");
    CHECK(pfarm_run(fails_at_7, iin, n, MPI_INT, iout, n, MPI_INT, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_WORKER &&
              pfarm_error_task() == 7 && strstr(pfarm_error_message(), "seven is not allowed") != NULL,
          "a failing task, hierarchical: not PFARM_ERROR_WORKER naming task 7");
    o.topology.farmer_computes = 1; /* the supermaster and the master compute too */
    for (int i = 0; i < n; ++i) out[i] = -1.0;
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, &r) == PFARM_OK,
          "hierarchical run with farmer_computes");
    if (rank == 0)
        for (int i = 0; i < n; ++i) CHECK(out[i] == in[i] * in[i] * in[i], "wrong output, hierarchical with farmer_computes");
    o.topology.farmer_computes = 0;
    o.topology.master_technique = "nope";
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_ARGUMENT &&
              names("master_technique"),
          "an unknown master_technique accepted or not named");
    o.topology.farmer = NULL;
    o.topology.master_technique = NULL;
    o.protocol.reclaim = 0;

    /* The work-stealing farm from C: random and tree victims, every result right; a failing task; a bad victim rule and
     * a technique it cannot claim with named. */
    o.topology.farmer = "stealing";
    for (int tree = 0; tree <= 1; ++tree) {
        o.topology.victims = tree ? "tree" : "random";
        o.schedule.technique = tree ? "gss" : "ss";
        for (int i = 0; i < n; ++i) out[i] = -1.0;
        CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, &r) == PFARM_OK, "stealing run");
        if (rank == 0)
            for (int i = 0; i < n; ++i) CHECK(out[i] == in[i] * in[i] * in[i], "wrong output, stealing");
    }
    CHECK(pfarm_run(fails_at_7, iin, n, MPI_INT, iout, n, MPI_INT, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_WORKER &&
              pfarm_error_task() == 7 && strstr(pfarm_error_message(), "seven is not allowed") != NULL,
          "a failing task, stealing: not PFARM_ERROR_WORKER naming task 7");
    o.topology.victims = "ring";
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_ARGUMENT &&
              names("victims"),
          "an unknown victim rule accepted or not named");
    o.topology.victims = NULL;
    o.schedule.technique = "fss";
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_ARGUMENT &&
              names("technique"),
          "fss under stealing accepted or not named");
    o.topology.farmer = NULL;

    pfarm(fails_at_7, iin, n, MPI_INT, iout, n, MPI_INT, MPI_COMM_WORLD, SCH_TRAD);
    CHECK(pfarm_status() == PFARM_ERROR_WORKER, "a failing task is not PFARM_ERROR_WORKER");
    CHECK(pfarm_error_task() == 7, "the failed task is not 7");
    CHECK(strstr(pfarm_error_message(), "seven is not allowed") != NULL, "the message is lost");

    pfarm(cube, in, n, MPI_DOUBLE, out, n + 1, MPI_DOUBLE, MPI_COMM_WORLD, SCH_MULTI);
    CHECK(pfarm_status() == PFARM_ERROR_ARGUMENT && names("out_length"), "out_length not named");
    pfarm(cube, in, 0, MPI_DOUBLE, out, 0, MPI_DOUBLE, MPI_COMM_WORLD, SCH_MULTI);
    CHECK(pfarm_status() == PFARM_ERROR_ARGUMENT && names("in_length"), "zero tasks: in_length not named");
    pfarm(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, (enum scheduling)42);
    CHECK(pfarm_status() == PFARM_ERROR_ARGUMENT && names("sched"), "bad enum: sched not named");
    pfarm(cube, in, n, MPI_DATATYPE_NULL, out, n, MPI_DOUBLE, MPI_COMM_WORLD, SCH_TRAD);
    CHECK(pfarm_status() == PFARM_ERROR_ARGUMENT && names("in_type"), "in_type not named");
    o.schedule.technique = "no-such-technique";
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_ARGUMENT &&
              names("technique"),
          "unknown technique accepted or not named");
    /* The options' errors name pfarm_options' fields, which are the C++ names too (never a flag). */
    o.schedule.technique = "n-gss";
    o.schedule.static_percent = 150;
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_ARGUMENT &&
              names("static_percent"),
          "static_percent 150 accepted or not named");
    o.schedule.static_percent = -1;
    o.schedule.technique = "dgss";
    {
        const double weights[] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0};
        o.schedule.weights = weights;
        o.schedule.weight_count = 9; /* more than any test's workers */
        CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_ARGUMENT &&
                  names("weights"),
              "a weight count that is not one per worker accepted or not named");
        o.schedule.weights = NULL;
        o.schedule.weight_count = 0;
    }
    o.schedule.technique = "multi";
    o.schedule.calibration = "sometimes";
    CHECK(pfarm_run(cube, in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD, &o, NULL) == PFARM_ERROR_ARGUMENT &&
              names("calibration"),
          "an unknown calibration accepted or not named");
    o.schedule.calibration = NULL;

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("c api: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
