/* range.c: the C API's pfarm_run_range with user_data (docs/skeleton.md, "C API: task indices, ranges and
 * user_data"). Farms the Collatz stopping times of the numbers first..first+count-1, five billion onwards (past
 * what an int holds), with no input array: each task receives its number as its index. Every rank passes its own
 * user_data: the step limit and a count of the tasks it computed. Rank 0 checks every result against a
 * sequential computation and the counts against `count`; every rank exits 0 only when all is right.
 *
 *   cmake -S docs/examples -B build-examples -DCMAKE_PREFIX_PATH=<where pfarm is installed>
 *   cmake --build build-examples && mpiexec -n 3 build-examples/range_c */
#include <pfarm.h>

#include <stdio.h>
#include <stdlib.h>

/* What each rank hands its tasks: its own copy, through pfarm_options.user_data. */
typedef struct collatz_state {
    long long limit; /* give up after this many steps (the result is then -1) */
    long long tasks; /* tasks this rank computed */
} collatz_state;

/* Steps from n down to 1, or -1 past `limit`. */
static long long stopping_time(long long n, long long limit) {
    long long steps = 0;
    while (n != 1) {
        if (steps == limit) return -1;
        n = n % 2 == 0 ? n / 2 : 3 * n + 1;
        ++steps;
    }
    return steps;
}

/* One task: `index` is the number itself (first..first+count-1); a range has no input, so `in` is NULL. */
static void collatz(long long index, const void *in, void *out, void *user_data) {
    collatz_state *state = (collatz_state *)user_data;
    (void)in;
    *(long long *)out = stopping_time(index, state->limit);
    ++state->tasks;
}

int main(int argc, char **argv) {
    const long long first = 5000000000LL, count = 20000;
    collatz_state state = {1000, 0};
    long long *steps = NULL, tasks = 0;
    int rank = 0, ok = 1;
    pfarm_options options;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) steps = malloc((size_t)count * sizeof *steps); /* results land on rank 0 only */

    pfarm_options_init(&options); /* sets options.size: always call it first */
    options.technique = "gss";
    options.user_data = &state;
    if (pfarm_run_range(collatz, first, count, steps, count, MPI_LONG_LONG, MPI_COMM_WORLD, &options, NULL) != PFARM_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, pfarm_error_message());
        ok = 0; /* the same status on every rank */
    }

    MPI_Reduce(&state.tasks, &tasks, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ok && rank == 0) {
        long long longest = 0, wrong = 0;
        for (long long i = 0; i < count; ++i) {
            wrong += steps[i] != stopping_time(first + i, state.limit);
            if (steps[i] > steps[longest]) longest = i;
        }
        ok = wrong == 0 && tasks == count;
        printf("range.c: %lld numbers from %lld, %lld tasks computed, %lld wrong; longest: %lld takes %lld steps\n",
               count, first, tasks, wrong, first + longest, steps[longest]);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(steps);
    MPI_Finalize();
    return ok ? 0 : 1;
}
