// The MPI side's RAII: the farm's duplicated communicator is a different context from the user's, so a message
// on one is never received on the other; it is freed on destruction. Runs under the MPI test helper.
#include "pfarm/mpi.hpp"

#include <cstdio>

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    int failures = 0;
    {
        pfarm::mpi::communicator farm(MPI_COMM_WORLD);
        const int rank = farm.rank(), size = farm.size();
        if (size < 2) {
            std::fprintf(stderr, "needs at least 2 ranks\n");
            return 1;
        }
        int result = MPI_UNEQUAL;
        MPI_Comm_compare(farm.get(), MPI_COMM_WORLD, &result);
        if (result != MPI_CONGRUENT) ++failures;
        // Same tag on both communicators: each receive must get the message of its own communicator.
        if (rank == 0) {
            const int user = 1, ours = 2;
            MPI_Send(&user, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
            MPI_Send(&ours, 1, MPI_INT, 1, 7, farm.get());
        } else if (rank == 1) {
            int got_ours = 0, got_user = 0;
            MPI_Recv(&got_ours, 1, MPI_INT, 0, 7, farm.get(), MPI_STATUS_IGNORE);
            MPI_Recv(&got_user, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (got_ours != 2 || got_user != 1) ++failures;
        }
        try {
            pfarm::mpi::communicator bad(MPI_COMM_NULL);
            ++failures;
        } catch (const pfarm::invalid_argument&) {
        }
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::printf("%s\n", total == 0 ? "mpi raii: ok" : "mpi raii: FAILED");
    return total == 0 ? 0 : 1;
}
