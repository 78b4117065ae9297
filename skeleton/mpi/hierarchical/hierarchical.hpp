// pfarm MPI engine, the hierarchical farm: what its files share. The ranks' roles (rank_layout) and the hierarchy
// plan over the computing ranks (grouping.cpp), sends without blocking, a master's chunk buffers (chunk_buffers.cpp),
// each role's entry point (supermaster.cpp, master.cpp) and the report's parts (report.cpp); run_hierarchical
// (hierarchical.cpp) puts them together.
#pragma once

#include "engine.hpp"
#include "wire.hpp"

#include "pfarm/hierarchy_plan.hpp"
#include "pfarm/master_session.hpp"
#include "pfarm/mpi.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace pfarm::detail {

/// Who is who, from each rank's group (shared_setup::group_of; -1: rank 0, the supermaster) and whether the
/// supermaster and the masters compute (farm_options::topology.farmer_computes).
struct rank_layout {
    std::vector<int> group_of;
    bool computes = false;
    std::vector<int> master;                ///< per group: its master's rank, the lowest of the group
    /// per group: its workers' ranks, ascending (its master first when it computes: worker 0 of its session)
    std::vector<std::vector<int>> members;
    std::vector<int> worker_index;          ///< per rank: its index among every computing rank in rank order (-1: none)
    int workers = 0;

    int groups() const { return static_cast<int>(master.size()); }
    /// Per worker (the computing ranks in rank order, as the per-worker option lists are): its group, -1 for rank
    /// 0's own worker.
    std::vector<int> worker_groups() const;
};

rank_layout layout_of(const std::vector<int>& group_of, bool computes);

/// The hierarchy plan over the layout's workers: the workers' technique and options, the supermaster's technique
/// (empty: the default), each group's farm facing its workers (`group`).
hierarchy_plan plan_of(const rank_layout& h, const std::string& technique, const std::string& master_technique,
                       const technique_options& parameters, task_count tasks, const farmer_session_options& group = {});

/// Sends without blocking, keeping each buffer alive until its send is complete.
class pending_sends {
public:
    /// `to`: the rank it goes to (let_go() reads it).
    void add(MPI_Request r, std::shared_ptr<wire_buffer> keep, int to = -1) {
        sends_.push_back({r, std::move(keep), to});
        if (sends_.size() >= 64) complete(false);
    }
    /// Drops the sends that are complete (`all`: waits for every one).
    void complete(bool all) {
        for (auto& s : sends_) {
            if (all) {
                mpi::check(MPI_Wait(&s.request, MPI_STATUS_IGNORE), "MPI_Wait");
            } else {
                int done = 0;
                mpi::check(MPI_Test(&s.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            }
        }
        std::erase_if(sends_, [](const send& s) { return s.request == MPI_REQUEST_NULL; });
    }
    /// Lets go of the sends to the ranks in `lost` (presumed lost: on_worker_loss), never received: their requests are
    /// freed and their buffers kept for the process's lifetime, since MPI may still read them.
    void let_go(const std::vector<int>& lost) {
        static std::vector<std::shared_ptr<wire_buffer>> kept;
        for (auto& s : sends_)
            if (s.request != MPI_REQUEST_NULL && std::find(lost.begin(), lost.end(), s.to) != lost.end()) {
                mpi::check(MPI_Request_free(&s.request), "MPI_Request_free");
                kept.push_back(std::move(s.keep));
            }
        std::erase_if(sends_, [](const send& s) { return s.request == MPI_REQUEST_NULL; });
    }

private:
    struct send {
        MPI_Request request;
        std::shared_ptr<wire_buffer> keep;
        int to;
    };
    std::vector<send> sends_;
};

// A master's chunk buffers (chunk_buffers.cpp).

/// A chunk a master holds, its buffers: its attachment in its session's ledger (master_session.hpp), from its reply
/// until its results go up, and as long after as a message up held back, a send up, or results on their way to it
/// keep them.
struct chunk_buffers {
    std::shared_ptr<wire_buffer> inputs;   ///< its inputs (none with replicated input or an index range)
    std::shared_ptr<wire_buffer> results;  ///< fixed size: at request_payload_offset + i x out_bytes
    std::vector<std::vector<std::byte>> variable;  ///< results of any size, per task, until they go up
    int pending = 0;  ///< deliveries into it from results still on their way (following_payloads)
};

inline chunk_buffers& buffers(const held_chunk& h) { return *static_cast<chunk_buffers*>(h.attachment.get()); }

/// The held chunk of `session` with task `task` (`rank`, the master's, names it in the error when there is none).
const held_chunk& holding(const master_session& session, int rank, task_count task);

/// The results of chunk `c` (a worker's), from `data`, which holds results from task `first` on, into the buffers of
/// the held chunks `into` (the deliver action's).
void store_results(const task_kernel& kernel, int rank, chunk c, const std::vector<held_chunk>& into, const std::byte* data,
                   std::size_t index_bytes, task_count first);

/// The inputs of `work` (a slice of the chunks `session` holds), contiguous: in place when one chunk holds them all,
/// else copied into `keep`, which keeps them either way.
const std::byte* inputs_of(const master_session& session, int rank, const task_kernel& kernel, chunk work,
                           std::shared_ptr<wire_buffer>& keep);

/// Results of any size of a chunk of `count` tasks, from `c.variable` into its results buffer after
/// request_payload_offset: the index of sizes (its bytes into `index`), then each task's bytes at a multiple of the
/// alignment (farm.hpp); returns the payload's bytes.
std::size_t pack_variable(const task_kernel& kernel, const chunk_buffers& c, task_count count, std::size_t& index);

/// Rank 0: the supermaster over the masters (upper communicator `up`; `run.comm` the farm's, on which it tells the workers
/// of a master presumed lost the outcome); once the farm is over and good, rank 0's report, with the masters' parts
/// (supermaster.cpp).
farm_report run_supermaster(const farm_run& run, MPI_Comm up, const rank_layout& h, const hierarchy_plan& plan,
                            bool keep_records, double cpu0);

/// A master of group g, between the supermaster (`up`) and its group (`down`); once the farm is over and good, its
/// part of the report sent up, and its group's entries of the report (master.cpp). `offsets`: rank 0's clock
/// offsets, which every rank of a hierarchical farm knows.
farm_report run_master(const farm_run& run, MPI_Comm up, MPI_Comm down, const rank_layout& h, const hierarchy_plan& plan,
                       int g, const std::vector<double>& offsets);

// The report (report.cpp).

/// A master's part, sent to rank 0 (collective over `up` with gather_report; `point_to_point` with on_worker_loss).
void send_group_part(MPI_Comm up, const report_part& part, bool point_to_point);
/// A master's report: its group's entries.
farm_report group_report(const farm_options& options, int ranks, task_count tasks, const rank_layout& h, int g,
                         const farmer_session& group);
/// Rank 0's report: the masters' parts (collective over `up`; with `living`, point to point from those upper ranks,
/// each waited for `wait` seconds at most), the supermaster's session `top` (its own worker's entries, the makespan),
/// its requests and its CPU time since `cpu0`.
farm_report gather_report(MPI_Comm up, const farm_options& options, int ranks, task_count tasks, const rank_layout& h,
                          const farmer_session& top, task_count requests, double cpu0,
                          const std::vector<int>* living = nullptr, double wait = 0.0);

}  // namespace pfarm::detail
