// pfarm-run: the --halt message between ranks: the rank that decides the run halts tells every other rank, which
// checks for it before each command and, with --halt now, while one runs.
#pragma once

#include "pfarm/mpi.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace pfarm::tools::run {

/// A halt (--halt) stops every rank from starting commands: the rank that decides it sends a one-int message to
/// every other rank on a communicator of its own; a rank probes for it before each command (MPI_Iprobe: about a
/// microsecond beside the millisecond a process takes to start). The commands already running end as they would;
/// the tasks not started yet are recorded as not run, and the farm runs to its end at once. finish() is collective:
/// every rank receives what was sent to it (rank 0, which may never probe, included) and completes its sends.
class halt_channel {
public:
    explicit halt_channel(MPI_Comm world) : comm_(world) {
        rank_ = comm_.rank();
        ranks_ = comm_.size();
        sent_.assign(static_cast<std::size_t>(ranks_), 0);
        received_.assign(static_cast<std::size_t>(ranks_), 0);
        requests_.assign(static_cast<std::size_t>(ranks_), MPI_REQUEST_NULL);
    }

    /// Whether some rank (this one included) has halted the run.
    bool halted() {
        while (!halted_ && ranks_ > 1) {
            int flag = 0;
            MPI_Status status;
            pfarm::mpi::check(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm_.get(), &flag, &status), "MPI_Iprobe");
            if (!flag) break;
            receive_from(status.MPI_SOURCE);
        }
        return halted_;
    }

    /// This rank saw a failure: halt every rank.
    void raise() {
        if (raised_) return;
        raised_ = halted_ = true;
        for (int r = 0; r < ranks_; ++r) {
            if (r == rank_) continue;
            sent_[static_cast<std::size_t>(r)] = 1;
            pfarm::mpi::check(MPI_Isend(&token_, 1, MPI_INT, r, tag, comm_.get(), &requests_[static_cast<std::size_t>(r)]),
                              "MPI_Isend");
        }
    }

    /// After the farm, on every living rank: returns whether any rank halted the run. Collective when `lost` is
    /// empty; else point to point among the living ranks (`lost`: the ranks the farm lost, on_worker_loss continue,
    /// the same list on every living rank), the sends to lost ranks dropped.
    bool finish(const std::vector<int>& lost = {}) {
        if (!lost.empty()) return finish_without(lost);
        std::vector<int> expected(static_cast<std::size_t>(ranks_), 0);
        pfarm::mpi::check(MPI_Alltoall(sent_.data(), 1, MPI_INT, expected.data(), 1, MPI_INT, comm_.get()), "MPI_Alltoall");
        for (int r = 0; r < ranks_; ++r)
            if (expected[static_cast<std::size_t>(r)] && !received_[static_cast<std::size_t>(r)]) receive_from(r);
        pfarm::mpi::check(MPI_Waitall(ranks_, requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
        int mine = raised_ ? 1 : 0, any = 0;
        pfarm::mpi::check(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, comm_.get()), "MPI_Allreduce");
        return any != 0;
    }

    /// After a failed farm (not collective): drops the sends still pending.
    void abandon() noexcept {
        for (MPI_Request& r : requests_) {
            if (r == MPI_REQUEST_NULL) continue;
            int done = 0;
            MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            if (!done) {
                MPI_Cancel(&r);
                MPI_Request_free(&r);
            }
        }
    }

private:
    /// finish() with lost ranks: each living rank tells each other living rank whether it sent it a halt and whether
    /// it raised one (two ints, tag `tag + 1`), receives the same from each, and takes the halts owed to it.
    bool finish_without(const std::vector<int>& lost) {
        const auto living = [&](int r) { return r != rank_ && std::find(lost.begin(), lost.end(), r) == lost.end(); };
        std::vector<std::array<int, 2>> mine(static_cast<std::size_t>(ranks_));
        std::vector<MPI_Request> told(static_cast<std::size_t>(ranks_), MPI_REQUEST_NULL);
        for (int r = 0; r < ranks_; ++r) {
            if (!living(r)) continue;
            mine[static_cast<std::size_t>(r)] = {sent_[static_cast<std::size_t>(r)], raised_ ? 1 : 0};
            pfarm::mpi::check(MPI_Isend(mine[static_cast<std::size_t>(r)].data(), 2, MPI_INT, r, tag + 1, comm_.get(),
                                        &told[static_cast<std::size_t>(r)]),
                              "MPI_Isend");
        }
        bool any = raised_;
        for (int r = 0; r < ranks_; ++r) {
            if (!living(r)) continue;
            std::array<int, 2> theirs{};
            pfarm::mpi::check(MPI_Recv(theirs.data(), 2, MPI_INT, r, tag + 1, comm_.get(), MPI_STATUS_IGNORE), "MPI_Recv");
            if (theirs[0] && !received_[static_cast<std::size_t>(r)]) receive_from(r);
            any = any || theirs[1] != 0;
        }
        pfarm::mpi::check(MPI_Waitall(ranks_, told.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (int r = 0; r < ranks_; ++r) {  // a halt sent to a lost rank is never received: dropped
            MPI_Request& q = requests_[static_cast<std::size_t>(r)];
            if (q == MPI_REQUEST_NULL) continue;
            if (living(r)) pfarm::mpi::check(MPI_Wait(&q, MPI_STATUS_IGNORE), "MPI_Wait");
            else MPI_Request_free(&q);
        }
        return any;
    }

    void receive_from(int source) {
        int token = 0;
        pfarm::mpi::check(MPI_Recv(&token, 1, MPI_INT, source, tag, comm_.get(), MPI_STATUS_IGNORE), "MPI_Recv");
        received_[static_cast<std::size_t>(source)] = 1;
        halted_ = true;
    }

    static constexpr int tag = 16;
    pfarm::mpi::communicator comm_;
    int rank_ = 0, ranks_ = 1;
    int token_ = 1;
    bool halted_ = false, raised_ = false;
    std::vector<int> sent_, received_;
    std::vector<MPI_Request> requests_;
};

}  // namespace pfarm::tools::run
