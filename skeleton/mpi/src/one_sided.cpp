// pfarm MPI engine: the end of a farm without a farmer (one_sided.hpp), on tag_failure, point to point (a
// non-blocking collective would leave its progress function in every later MPI poll of the process), and its report.
#include "one_sided.hpp"

#include "messages.hpp"
#include "report.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

namespace pfarm::detail {

namespace {

/// Waits for `request` without holding a core when ranks share cores (docs/skeleton.md "Waiting without
/// spinning").
void wait_for(MPI_Request& request, bool gentle) {
    double pause = 2e-6;
    for (int done = 0;;) {
        mpi::check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) return;
        if (gentle) {
            std::this_thread::sleep_for(std::chrono::duration<double>(pause));
            pause = std::min(pause * 2.0, 500e-6);
        }
    }
}

}  // namespace

std::optional<chunk_failure> run_chunk_tasks(const task_kernel& kernel, const shared_setup& setup, int rank, double t0,
                                             const chunk& c, const std::byte* inputs, std::byte* results,
                                             std::vector<failed_task>& failed, const std::function<void()>& between) {
    const bool emulated = setup.emulated.active();
    const bool skips = setup.config.task_errors != static_cast<std::int32_t>(task_error_rule::kind::stop);
    const auto clock = [t0] { return now() - t0; };
    double owed = 0.0;
    for (task_count task = c.first; task < c.first + c.count; ++task) {
        const auto i = static_cast<std::size_t>(task - c.first);
        std::byte* out = results + i * kernel.out_bytes;
        const double task_start = emulated ? clock() : 0.0;
        std::optional<std::string> threw;
        try {
            kernel.run(task, inputs + i * kernel.in_bytes, out);
        } catch (const std::exception& e) {
            threw = e.what();
        } catch (...) {
            threw = "unknown exception";
        }
        if (threw) {
            if (!skips) return chunk_failure{task, *threw};
            if (kernel.fill.size() == kernel.out_bytes) std::memcpy(out, kernel.fill.data(), kernel.out_bytes);
            else std::memset(out, 0, kernel.out_bytes);
            failed.push_back({task, rank, *threw});
        }
        if (emulated) {
            owed += setup.emulated.owed(rank, task_start, clock() - task_start);
            if (owed >= 1e-3) std::this_thread::sleep_for(std::chrono::duration<double>(owed)), owed = 0.0;
        }
        if (between) between();
    }
    if (owed > 0.0) std::this_thread::sleep_for(std::chrono::duration<double>(owed));
    return std::nullopt;
}

outcome collect_outcome(MPI_Comm comm, int ranks, const rank_end& mine, bool gentle, const std::function<void()>& idle) {
    std::vector<failure_header> done(static_cast<std::size_t>(ranks));
    std::vector<MPI_Request> requests(static_cast<std::size_t>(ranks - 1));
    for (int q = 1; q < ranks; ++q)
        mpi::check(MPI_Irecv(&done[static_cast<std::size_t>(q)], sizeof(failure_header), MPI_BYTE, q, tag_failure, comm,
                             &requests[static_cast<std::size_t>(q - 1)]),
                   "MPI_Irecv");
    double pause = 2e-6;
    for (int all = 0;;) {
        mpi::check(MPI_Testall(ranks - 1, requests.data(), &all, MPI_STATUSES_IGNORE), "MPI_Testall");
        if (all) break;
        idle();
        if (gentle) std::this_thread::sleep_for(std::chrono::duration<double>(pause)), pause = std::min(pause * 2, 500e-6);
    }
    done[0] = mine.failure.value_or(failure_header{});
    std::vector<std::string> texts(static_cast<std::size_t>(ranks));
    texts[0] = mine.text;
    outcome o;
    for (int q = ranks - 1; q >= 0; --q) {  // the lowest failed rank's failure is the farm's
        const failure_header& h = done[static_cast<std::size_t>(q)];
        if (!h.failed) continue;
        std::string& text = texts[static_cast<std::size_t>(q)];
        if (q > 0 && h.length > 0) {
            text.resize(static_cast<std::size_t>(h.length));
            mpi::check(MPI_Recv(text.data(), h.length, MPI_CHAR, q, tag_failure, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        }
        o.rank = q;
        o.task = h.task;
        o.what = h.task >= 0 ? farm_outcome::kind::task_failed : farm_outcome::kind::worker_failed;
        o.text = h.task >= 0 ? text : "rank " + std::to_string(q) + ": " + text;
    }
    const failure_header answer{o.task, static_cast<std::int32_t>(o.text.size()), static_cast<std::int32_t>(o.what), o.rank};
    for (int q = 1; q < ranks; ++q) {
        mpi::check(MPI_Send(&answer, sizeof answer, MPI_BYTE, q, tag_failure, comm), "MPI_Send");
        if (answer.length > 0) mpi::check(MPI_Send(o.text.data(), answer.length, MPI_CHAR, q, tag_failure, comm), "MPI_Send");
    }
    return o;
}

outcome report_and_await_outcome(MPI_Comm comm, const rank_end& end, bool gentle) {
    const failure_header mine = end.failure.value_or(failure_header{});
    mpi::check(MPI_Send(&mine, sizeof mine, MPI_BYTE, 0, tag_failure, comm), "MPI_Send");
    if (mine.failed && mine.length > 0)
        mpi::check(MPI_Send(end.text.data(), mine.length, MPI_CHAR, 0, tag_failure, comm), "MPI_Send");
    failure_header answer;
    MPI_Request request;
    mpi::check(MPI_Irecv(&answer, sizeof answer, MPI_BYTE, 0, tag_failure, comm, &request), "MPI_Irecv");
    wait_for(request, gentle);
    outcome o;
    o.what = static_cast<farm_outcome::kind>(answer.failed);
    o.rank = answer.rank;
    o.task = answer.task;
    o.text.resize(static_cast<std::size_t>(answer.length));
    if (answer.length > 0)
        mpi::check(MPI_Recv(o.text.data(), answer.length, MPI_CHAR, 0, tag_failure, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    return o;
}

report_part own_part(int rank, worker_part w, const std::vector<chunk_record>& records, bool keep_records,
                     const std::vector<failed_task>& failed) {
    report_part mine;
    mine.workers.push_back(std::move(w));
    if (keep_records)
        for (const chunk_record& c : records)
            mine.records.push_back({rank, c.first, c.count, c.claimed, c.started, c.finished, c.flushed, false, {}});
    mine.failed = failed;
    mine.task_errors = static_cast<task_count>(failed.size());
    return mine;
}

void merge_rank_parts(MPI_Comm comm, int rank, int ranks, report_part mine, const std::vector<double>& offsets,
                      int first_computing, farm_report& r, const std::vector<int>* lost, std::vector<report_part> lost_parts,
                      double wait) {
    std::vector<report_part> parts;
    const auto is_lost = [lost](int q) { return std::find(lost->begin(), lost->end(), q) != lost->end(); };
    if (!lost) {
        parts = gather_parts(comm, 0, mine);
    } else if (rank != 0) {
        if (!is_lost(rank)) send_part(comm, 0, mine);
    } else {
        std::vector<int> living;
        for (int q = 1; q < ranks; ++q)
            if (!is_lost(q)) living.push_back(q);
        parts = receive_parts(comm, mine, living, wait);
    }
    for (report_part& p : lost_parts) parts.push_back(std::move(p));
    if (rank != 0) {
        mine.workers.front().finish = 0.0;          // known on rank 0's clock only
        mine.records.clear();                       // the trace is rank 0's
        mine.failed.clear(), mine.task_errors = 0;  // as the list of failed tasks
        add_part(r, mine);
        return;
    }
    for (std::size_t p = 0; p < parts.size(); ++p) {  // to rank 0's clock (clock_offsets)
        if (parts[p].workers.empty()) continue;  // a lost rank's place: its part follows
        worker_part& w = parts[p].workers.front();
        const double off = offsets[static_cast<std::size_t>(w.rank)];
        w.finish = !w.chunks.empty() ? w.finish - off : 0.0;  // a rank that got nothing finishes at 0
        for (chunk_trace& c : parts[p].records) c.sent -= off, c.started -= off, c.finished -= off, c.received -= off;
        add_part(r, parts[p]);
    }
    std::vector<int> computing;
    for (int q = first_computing; q < ranks; ++q) computing.push_back(q);
    finish_report(r, computing, trace_order::first);
}

}  // namespace pfarm::detail
