// pfarm-run: --line-buffer's lines on their way to rank 0. A worker rank sends each piece of its commands' output
// (whole lines, run_process.hpp's line_piece) to rank 0 as it comes, without blocking, on a communicator of
// pfarm-run's own; rank 0 receives them whenever it polls: from the farm's side channel while it farms
// (farm_options::protocol.side_channel), from its own commands' wait while it runs one, and after the farm until
// every living rank has said that it sent its last.
#pragma once

#include "pfarm/technique.hpp"
#include "pfarm/error.hpp"
#include "pfarm/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string_view>
#include <thread>
#include <vector>

namespace pfarm::tools::run {

/// A piece of a command's output as rank 0 receives it.
struct line_message {
    task_count task = 0;  ///< the farm's task
    long slot = 1;        ///< {%}
    int stream = 1;       ///< 1 stdout, 2 stderr
    bool mid_line = false;  ///< it continues a line cut at the piece bound (no tag at its start)
    std::string_view text;  ///< valid during the call that hands it on
};

class line_channel {
public:
    explicit line_channel(MPI_Comm world) : comm_(world) { ranks_ = comm_.size(); }
    line_channel(const line_channel&) = delete;
    line_channel& operator=(const line_channel&) = delete;
    ~line_channel() { abandon(); }

    /// A worker rank: sends a piece to rank 0 without waiting for it, unless more than `in_flight_bytes` are still
    /// on their way (then it waits for the oldest: rank 0 receives whenever it polls).
    void send(task_count task, long slot, int stream, std::string_view text, bool mid_line) {
        progress();
        pending& p = sends_.emplace_back();
        const std::int64_t head[4] = {task, slot, stream, mid_line ? 1 : 0};
        p.bytes.resize(sizeof head + text.size());
        std::memcpy(p.bytes.data(), head, sizeof head);
        std::memcpy(p.bytes.data() + sizeof head, text.data(), text.size());
        in_flight_ += p.bytes.size();
        pfarm::mpi::check(MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, 0, tag_piece, comm_.get(),
                                    &p.request),
                          "MPI_Isend");
        while (in_flight_ > in_flight_bytes && !sends_.empty()) {
            pfarm::mpi::check(MPI_Wait(&sends_.front().request, MPI_STATUS_IGNORE), "MPI_Wait");
            retire_front();
        }
    }

    /// A worker rank: lets go of the sends that have completed (oldest first).
    void progress() {
        while (!sends_.empty()) {
            int done = 0;
            pfarm::mpi::check(MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (!done) return;
            retire_front();
        }
    }

    /// A worker rank, after its last command ended (its last piece sent): tells rank 0 it has sent everything, and
    /// waits for its sends (rank 0 receives them in order, the end last: MPI keeps a sender's order).
    void finish() {
        const std::int64_t end = 0;
        pfarm::mpi::check(MPI_Send(&end, 1, MPI_INT64_T, 0, tag_end, comm_.get()), "MPI_Send");
        while (!sends_.empty()) {
            pfarm::mpi::check(MPI_Wait(&sends_.front().request, MPI_STATUS_IGNORE), "MPI_Wait");
            retire_front();
        }
    }

    /// Rank 0: hands the pieces that have come (at most `most`) to `arrive(const line_message&)`, each rank's in the
    /// order it sent them; returns whether anything came (an end included).
    template <class Arrive>
    bool poll(Arrive&& arrive, int most = 64) {
        bool any = false;
        for (int n = 0; n < most && receive(arrive); ++n) any = true;
        return any;
    }

    /// Rank 0, after the farm: receives every rank's pieces until each has ended, but for the ranks in `lost`
    /// (presumed lost by the farm: nothing more is waited for from them).
    template <class Arrive>
    void drain(const std::vector<int>& lost, Arrive&& arrive) {
        ended_.resize(static_cast<std::size_t>(ranks_), 0);
        const auto waiting = [&] {
            for (int r = 1; r < ranks_; ++r)
                if (!ended_[static_cast<std::size_t>(r)] && std::find(lost.begin(), lost.end(), r) == lost.end()) return true;
            return false;
        };
        auto pause = std::chrono::microseconds(2);
        while (waiting()) {
            if (receive(arrive)) {
                pause = std::chrono::microseconds(2);
                continue;
            }
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(1000));
        }
    }

    /// After a failed farm (not collective): the sends still on their way are dropped.
    void abandon() noexcept {
        for (pending& p : sends_) {
            int done = 0;
            MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
            if (!done) {
                MPI_Cancel(&p.request);
                MPI_Request_free(&p.request);
            }
        }
        sends_.clear();
        in_flight_ = 0;
    }

    /// Above it a worker waits for its oldest piece to be received before it sends more.
    static constexpr std::size_t in_flight_bytes = std::size_t{16} << 20;

private:
    struct pending {
        std::vector<char> bytes;
        MPI_Request request = MPI_REQUEST_NULL;
    };

    void retire_front() {
        in_flight_ -= sends_.front().bytes.size();
        sends_.pop_front();
    }

    /// One message, if one has come; false when none has.
    template <class Arrive>
    bool receive(Arrive&& arrive) {
        int flag = 0;
        MPI_Message message = MPI_MESSAGE_NULL;
        MPI_Status status;
        pfarm::mpi::check(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &flag, &message, &status), "MPI_Improbe");
        if (!flag) return false;
        int bytes = 0;
        pfarm::mpi::check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
        buffer_.resize(static_cast<std::size_t>(std::max(bytes, 1)));
        pfarm::mpi::check(MPI_Mrecv(buffer_.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
        if (status.MPI_TAG == tag_end) {
            ended_.resize(static_cast<std::size_t>(ranks_), 0);
            ended_[static_cast<std::size_t>(status.MPI_SOURCE)] = 1;
            return true;
        }
        std::int64_t head[4] = {};
        if (static_cast<std::size_t>(bytes) < sizeof head) throw error("pfarm-run: a line message is too short");
        std::memcpy(head, buffer_.data(), sizeof head);
        line_message m;
        m.task = head[0];
        m.slot = static_cast<long>(head[1]);
        m.stream = static_cast<int>(head[2]);
        m.mid_line = head[3] != 0;
        m.text = std::string_view(buffer_.data() + sizeof head, static_cast<std::size_t>(bytes) - sizeof head);
        arrive(static_cast<const line_message&>(m));
        return true;
    }

    static constexpr int tag_piece = 1, tag_end = 2;
    pfarm::mpi::communicator comm_;
    int ranks_ = 1;
    std::deque<pending> sends_;
    std::size_t in_flight_ = 0;
    std::vector<char> buffer_;
    std::vector<char> ended_;  ///< rank 0: per rank, whether its end has come
};

}  // namespace pfarm::tools::run
