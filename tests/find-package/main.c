/* The C consumer's program (tests/find-package): the README's C example, with its results checked. */
#include <pfarm.h>
#include <stdio.h>

static void square(const void *in, void *out) { *(double *)out = *(const double *)in * *(const double *)in; }

int main(int argc, char **argv) {
    double in[100], out[100];
    int rank = 0, status;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 100; ++i) in[i] = i;
    pfarm(square, in, 100, MPI_DOUBLE, out, 100, MPI_DOUBLE, MPI_COMM_WORLD, SCH_MULTI);
    status = pfarm_status();
    if (status != PFARM_OK) fprintf(stderr, "pfarm: %s\n", pfarm_error_message());
    if (status == PFARM_OK && rank == 0) {
        for (int i = 0; i < 100; ++i)
            if (out[i] != in[i] * in[i]) status = PFARM_ERROR_INTERNAL;
        printf("consumer (C): %s\n", status == PFARM_OK ? "100 squares" : "wrong results");
    }
    MPI_Finalize();
    return status;
}
