// The farmer's inbox order (skeleton/mpi/src/messages.hpp), on 2 ranks: with reclaim a victim's answer
// (tag_released) is taken before a request that came earlier; without reclaim only requests are looked at.
// Receives are posted ahead, so "has come" is waited for with a pause after the sender's barrier.
#include "messages.hpp"
#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what);
        ++failures;
    }
}

/// Takes the inbox's next message (non-blocking unless `block`): its tag (by which receive took it) and its
/// payload; tag -1 when there was none.
int take(pfarm::detail::farmer_inbox& inbox, bool block, int* payload) {
    pfarm::detail::posted_receive* m = inbox.next(block);
    if (!m) return -1;
    std::memcpy(payload, m->data(), sizeof *payload);
    int tag = *payload >= 100 ? pfarm::detail::tag_released : pfarm::detail::tag_request;  // answers carry 100+
    inbox.release(m);
    return tag;
}

void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

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
    const auto send = [&](int value, int tag) {
        pfarm::mpi::check(MPI_Send(&value, 1, MPI_INT, 0, tag, comm), "MPI_Send");
    };
    if (farm.rank() == 1) {
        send(1, tag_request);  // a request, then a victim's answer
        send(102, tag_released);
        MPI_Barrier(comm);
        MPI_Barrier(comm);
        send(103, tag_released);  // one more answer, for the blocking wait
        MPI_Barrier(comm);
        send(104, tag_released);  // an answer, then a request: without reclaim only the request is taken
        send(4, tag_request);
    } else {
        int value = 0;
        {
            farmer_inbox inbox(comm, true, false);
            MPI_Barrier(comm);
            settle();  // both have come
            expect(take(inbox, false, &value) == tag_released && value == 102, "with reclaim, the answer first");
            expect(take(inbox, false, &value) == tag_request && value == 1, "then the request that came before it");
            expect(take(inbox, false, &value) == -1, "then nothing");
            MPI_Barrier(comm);
            expect(take(inbox, true, &value) == tag_released && value == 103, "a blocking wait takes an answer too");
            inbox.close();
        }
        farmer_inbox inbox(comm, false, false);
        MPI_Barrier(comm);
        settle();  // both have come
        expect(take(inbox, false, &value) == tag_request && value == 4, "without reclaim, the request only");
        expect(take(inbox, false, &value) == -1, "without reclaim, an answer is not looked at");
        inbox.close();
        int answer = 0;  // (the answer, taken to finish clean)
        pfarm::mpi::check(MPI_Recv(&answer, 1, MPI_INT, 1, tag_released, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        expect(answer == 104, "the answer left for later is still there");
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    if (farm.rank() == 0) std::printf("test_messages: %s\n", all == 0 ? "passed" : "FAILED");
    return all == 0 ? 0 : 1;
}
