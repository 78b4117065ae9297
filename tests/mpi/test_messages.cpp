// The farmer's inbox order (skeleton/mpi/src/messages.hpp), on 2 ranks: with reclaim a victim's answer
// (tag_released) is taken before a request that came earlier; without reclaim only requests are looked at.
#include "messages.hpp"
#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what);
        ++failures;
    }
}

/// Takes the farmer's next message (non-blocking unless `block`) and returns its tag and its payload;
/// tag -1 when there was none.
int take(MPI_Comm comm, bool reclaim, bool block, int* payload) {
    MPI_Status status;
    MPI_Message message = pfarm::detail::next_farmer_message(comm, reclaim, block, false, status);
    if (message == MPI_MESSAGE_NULL) return -1;
    pfarm::mpi::check(MPI_Mrecv(payload, 1, MPI_INT, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    return status.MPI_TAG;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace pfarm::detail;
    pfarm::mpi::environment env(&argc, &argv);
    pfarm::mpi::communicator farm(MPI_COMM_WORLD);
    const MPI_Comm comm = farm.get();
    if (farm.size() != 2) {
        if (farm.rank() == 0) std::fprintf(stderr, "test_messages: run on 2 ranks\n");
        return 2;
    }
    if (farm.rank() == 1) {
        // A request, then a victim's answer; later one more answer for the blocking wait.
        for (int i : {1, 2}) pfarm::mpi::check(MPI_Send(&i, 1, MPI_INT, 0, i == 1 ? tag_request : tag_released, comm), "MPI_Send");
        MPI_Barrier(comm);
        const int three = 3;
        pfarm::mpi::check(MPI_Send(&three, 1, MPI_INT, 0, tag_released, comm), "MPI_Send");
        MPI_Barrier(comm);
        const int four = 4;
        pfarm::mpi::check(MPI_Send(&four, 1, MPI_INT, 0, tag_released, comm), "MPI_Send");
        pfarm::mpi::check(MPI_Send(&four, 1, MPI_INT, 0, tag_request, comm), "MPI_Send");
    } else {
        // Both have arrived once the later one is there (messages between two ranks arrive in order).
        MPI_Status status;
        pfarm::mpi::check(MPI_Probe(1, tag_released, comm, &status), "MPI_Probe");
        int value = 0;
        expect(take(comm, true, false, &value) == tag_released && value == 2, "with reclaim, the answer first");
        expect(take(comm, true, false, &value) == tag_request && value == 1, "then the request that came before it");
        expect(take(comm, true, false, &value) == -1, "then nothing");
        MPI_Barrier(comm);
        expect(take(comm, true, true, &value) == tag_released && value == 3, "a blocking wait takes an answer too");
        MPI_Barrier(comm);
        pfarm::mpi::check(MPI_Probe(1, tag_request, comm, &status), "MPI_Probe");
        expect(take(comm, false, false, &value) == tag_request && value == 4, "without reclaim, the request only");
        expect(take(comm, false, false, &value) == -1, "without reclaim, an answer is not looked at");
        expect(take(comm, true, false, &value) == tag_released && value == 4, "(the answer, taken to finish clean)");
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    if (farm.rank() == 0) std::printf("test_messages: %s\n", all == 0 ? "passed" : "FAILED");
    return all == 0 ? 0 : 1;
}
