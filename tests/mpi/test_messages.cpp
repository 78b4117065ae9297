// The farmer's inbox order (skeleton/mpi/src/messages.hpp), on 2 ranks: with reclaim a victim's answer
// (tag_released) is taken before a request that came earlier; without reclaim only requests are looked at. Where a
// sender may be lost (may_lose) the same order holds with nothing posted ahead, a message above the eager size comes
// whole through next(false) (null while it is on its way), and a blocking next() is refused.
// "Both have come" is known when a later message on another tag (tag_clock) has: messages between two ranks
// arrive in order (Open MPI's shared-memory and TCP transports keep it; the posted receives match on arrival).
#include "messages.hpp"
#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

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
    const pfarm::detail::received_message* m = inbox.next(block);
    if (!m) return -1;
    std::memcpy(payload, m->data, sizeof *payload);
    int tag = *payload >= 100 ? pfarm::detail::tag_released : pfarm::detail::tag_request;  // answers carry 100+
    inbox.release();
    return tag;
}

/// Rank 0 waits for rank 1's marker: the messages rank 1 sent before it have come.
void settle(MPI_Comm comm) {
    int marker = 0;
    pfarm::mpi::check(MPI_Recv(&marker, 1, MPI_INT, 1, pfarm::detail::tag_clock, comm, MPI_STATUS_IGNORE), "MPI_Recv");
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
    const auto send = [&](int value, int tag) {
        pfarm::mpi::check(MPI_Send(&value, 1, MPI_INT, 0, tag, comm), "MPI_Send");
    };
    if (farm.rank() == 1) {
        send(1, tag_request);  // a request, then a victim's answer
        send(102, tag_released);
        send(0, tag_clock);
        MPI_Barrier(comm);
        MPI_Barrier(comm);
        send(103, tag_released);  // one more answer, for the blocking wait
        MPI_Barrier(comm);
        send(104, tag_released);  // an answer, then a request: without reclaim only the request is taken
        send(4, tag_request);
        send(0, tag_clock);
        MPI_Barrier(comm);
        // may_lose: a request, an answer, then a request above the eager size (sent without waiting: rank 0 takes it
        // after the marker), then the marker.
        send(5, tag_request);
        send(105, tag_released);
        std::vector<int> big(10000, 6);
        MPI_Request sending = MPI_REQUEST_NULL;
        pfarm::mpi::check(MPI_Isend(big.data(), static_cast<int>(big.size()), MPI_INT, 0, tag_request, comm, &sending),
                          "MPI_Isend");
        send(0, tag_clock);
        pfarm::mpi::check(MPI_Wait(&sending, MPI_STATUS_IGNORE), "MPI_Wait");
    } else {
        int value = 0;
        {
            farmer_inbox inbox(comm, true, false, false);
            MPI_Barrier(comm);
            settle(comm);  // both have come
            expect(take(inbox, false, &value) == tag_released && value == 102, "with reclaim, the answer first");
            expect(take(inbox, false, &value) == tag_request && value == 1, "then the request that came before it");
            expect(take(inbox, false, &value) == -1, "then nothing");
            MPI_Barrier(comm);
            expect(take(inbox, true, &value) == tag_released && value == 103, "a blocking wait takes an answer too");
            inbox.close();
        }
        farmer_inbox inbox(comm, false, false, false);
        MPI_Barrier(comm);
        settle(comm);  // both have come
        expect(take(inbox, false, &value) == tag_request && value == 4, "without reclaim, the request only");
        expect(take(inbox, false, &value) == -1, "without reclaim, an answer is not looked at");
        inbox.close();
        int answer = 0;  // (the answer, taken to finish clean)
        pfarm::mpi::check(MPI_Recv(&answer, 1, MPI_INT, 1, tag_released, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        expect(answer == 104, "the answer left for later is still there");
        MPI_Barrier(comm);
        farmer_inbox mortal(comm, true, false, true);
        settle(comm);  // all three have come, the last one's body perhaps not yet
        expect(take(mortal, false, &value) == tag_released && value == 105, "may_lose, with reclaim: the answer first");
        expect(take(mortal, false, &value) == tag_request && value == 5, "may_lose: then the request");
        const received_message* m = nullptr;
        for (int tries = 0; !m && tries < 10000000; ++tries) m = mortal.next(false);
        expect(m && m->source == 1 && m->bytes() == 40000, "may_lose: a message above the eager size, whole");
        if (m) {
            std::vector<int> got(10000);
            std::memcpy(got.data(), m->data, 40000);
            expect(got.front() == 6 && got.back() == 6, "may_lose: its bytes");
            mortal.release();
        }
        expect(mortal.on_their_way() == 0, "may_lose: nothing on its way once it is in");
        expect(take(mortal, false, &value) == -1, "may_lose: then nothing");
        bool refused = false;
        try {
            mortal.next(true);
        } catch (const pfarm::internal_error&) {
            refused = true;
        }
        expect(refused, "may_lose: a blocking next() is refused");
        mortal.close();
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
    if (farm.rank() == 0) std::printf("test_messages: %s\n", all == 0 ? "passed" : "FAILED");
    return all == 0 ? 0 : 1;
}
