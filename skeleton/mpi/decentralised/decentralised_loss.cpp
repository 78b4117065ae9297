// pfarm MPI engine: the decentralised farm under on_worker_loss (decentralised_loss.hpp): a claimer's slot and flags,
// rank 0's watch and the end, point to point. The rule (deadlines, what goes back, in what pieces) is the core's
// claim_watch.
#include "decentralised_loss.hpp"

#include "messages.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <thread>

namespace pfarm::detail {

namespace {

constexpr double look_interval = 2e-3;     ///< rank 0 looks at the slots at most this often between its own tasks
constexpr std::size_t longest_text = 2000;  ///< of a failure's text in an end message (which stays below eager size)
/// failure_header::failed of a note of a failed run under on_task_error retry (not an end: the rank goes on).
constexpr std::int32_t task_error_note = -1;

/// A message to rank 0 on tag_failure (a rank's end, or a note of a failed run): `h`, then `text` cut to longest_text,
/// so that it stays below MPI's eager size and rank 0, once it has matched it, holds all of it (a rank dying mid-send
/// leaves no half to wait for).
std::vector<std::byte> packed(failure_header h, const std::string& text) {
    const std::size_t n = std::min(text.size(), longest_text);
    h.length = static_cast<std::int32_t>(n);
    std::vector<std::byte> bytes(sizeof h + n);
    std::memcpy(bytes.data(), &h, sizeof h);
    std::memcpy(bytes.data() + sizeof h, text.data(), n);
    return bytes;
}

/// A rank's end: its failure (none: done), with the failure's text.
std::vector<std::byte> packed_end(const rank_end& e) {
    const failure_header h = e.failure.value_or(failure_header{});
    return packed(h, h.failed ? e.text : std::string());
}

void pause_for(double& pause, bool gentle) {
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(2.0 * pause, gentle ? 1e-3 : 1e-4);
}

}  // namespace

void claim_beat::holds(chunk c) {
    slot_[0] = ++beat_, slot_[1] = c.first, slot_[2] = c.count, slot_[3] = done_, slot_[4] = std::bit_cast<std::int64_t>(busy_);
    mpi::check(MPI_Accumulate(slot_, 5, MPI_INT64_T, 0, layout_.slot(rank_), 5, MPI_INT64_T, MPI_REPLACE, window_.get()),
               "MPI_Accumulate");
}

void claim_beat::beat() {
    slot_[0] = ++beat_;
    mpi::check(MPI_Accumulate(slot_, 1, MPI_INT64_T, 0, layout_.slot(rank_), 1, MPI_INT64_T, MPI_REPLACE, window_.get()),
               "MPI_Accumulate");
}

bool claim_beat::presumed_lost() {
    std::int64_t mark = 0;
    mpi::check(MPI_Fetch_and_op(nullptr, &mark, MPI_INT64_T, 0, layout_.slot(rank_) + 8 * watch_layout::mark_word,
                                MPI_NO_OP, window_.get()),
               "MPI_Fetch_and_op");
    window_.flush();
    return mark != 0;
}

void claim_beat::delivered(chunk c, double busy, std::span<const task_count> failed) {
    done_ += c.count - static_cast<task_count>(failed.size());
    busy_ += busy;
    ones_.assign(static_cast<std::size_t>(c.count), 1);
    for (const task_count t : failed) ones_.at(static_cast<std::size_t>(t - c.first)) = 0;
    window_.put(reinterpret_cast<const std::byte*>(ones_.data()), ones_.size(), layout_.flags + c.first);
}

loss_host::loss_host(MPI_Comm comm, farm_window& window, const watch_layout& layout, int ranks, int first_worker,
                     task_count tasks, const worker_loss_rule& rule, task_count min_chunk, std::function<void()> poison,
                     bool watching, int attempts)
    : comm_(comm), window_(window), layout_(layout), ranks_(ranks), first_(first_worker), tasks_(tasks), rule_(rule),
      watch_(tasks, ranks - first_worker, watching ? rule : worker_loss_rule{},
             min_chunk),
      poison_(std::move(poison)),
      words_(static_cast<std::size_t>(ranks) * watch_layout::slot_words), slots_(static_cast<std::size_t>(ranks - first_worker)),
      ended_(slots_.size(), 0), watched_(slots_.size(), 1), watching_(watching), attempts_(attempts) {
    if (first_ == 0) ended_[0] = 1, watched_[0] = 0;  // rank 0 is not watched: a lost rank 0 ends the job
}

void loss_host::read_slots() {
    const int n = ranks_ * watch_layout::slot_words;
    mpi::check(MPI_Get_accumulate(nullptr, 0, MPI_INT64_T, words_.data(), n, MPI_INT64_T, 0, layout_.slots, n, MPI_INT64_T,
                                  MPI_NO_OP, window_.get()),
               "MPI_Get_accumulate");
    window_.flush();
    for (std::size_t w = 0; w < slots_.size(); ++w) {
        const std::int64_t* s = words_.data() + (w + static_cast<std::size_t>(first_)) * watch_layout::slot_words;
        slots_[w] = {s[0], s[1], s[2], s[3], std::bit_cast<double>(s[4])};
    }
}

void loss_host::watch(bool at_once) {
    if (!watching_) return;
    const double t = detail::now();
    if (!at_once && t - last_look_ < look_interval) return;
    last_look_ = t;
    read_slots();
    for (int w : watch_.look(t, slots_, watched_)) presume_lost(w);
}

void loss_host::presume_lost(int w) {
    const int rank = w + first_;
    // Its mark: alive after all, it drops the results of the chunk it holds and ends (claim_beat::presumed_lost).
    mpi::check(MPI_Accumulate(&mark_, 1, MPI_INT64_T, 0, layout_.slot(rank) + 8 * watch_layout::mark_word, 1, MPI_INT64_T,
                              MPI_REPLACE, window_.get()),
               "MPI_Accumulate");
    window_.flush();
    if (rule_.what != worker_loss_rule::kind::stop || failure_) return;
    outcome o;
    o.what = farm_outcome::kind::worker_lost;
    o.rank = rank;
    o.text = "rank " + std::to_string(rank) + ": no slot written within its deadline (on_worker_loss " + to_string(rule_) +
             "): presumed lost";
    failure_ = o;
    poison_();
}

void loss_host::end_of(int rank, const failure_header& h, const std::string& text) {
    const auto w = static_cast<std::size_t>(rank - first_);
    if (rank >= first_ && watch_.lost(static_cast<int>(w))) return;  // presumed lost: what it says comes too late
    if (rank >= first_) ended_[w] = 1;
    // The farm's failure is the lowest failed rank's, unless a loss under stop came first.
    if (!h.failed || (failure_ && (failure_->what == farm_outcome::kind::worker_lost || failure_->rank <= rank))) return;
    outcome o;
    o.rank = rank;
    o.task = h.task;
    o.what = h.task >= 0 ? farm_outcome::kind::task_failed : farm_outcome::kind::worker_failed;
    o.text = h.task >= 0 ? text : "rank " + std::to_string(rank) + ": " + text;
    failure_ = o;
}

void loss_host::task_error(task_count task, int rank, const std::string& text) {
    failed_runs& f = failed_runs_[task];
    ++f.runs, f.last_rank = rank, f.last_text = text;
    ++task_errors_;
}

void send_task_error(MPI_Comm comm, int rank, task_count task, const std::string& text) {
    const std::vector<std::byte> bytes = packed(failure_header{task, 0, task_error_note, rank}, text);
    mpi::check(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, tag_failure, comm), "MPI_Send");
}

void loss_host::take_ends() {
    for (;;) {
        int flag = 0;
        MPI_Status status;
        mpi::check(MPI_Iprobe(MPI_ANY_SOURCE, tag_failure, comm_, &flag, &status), "MPI_Iprobe");
        if (!flag) return;
        int count = 0;
        mpi::check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
        std::vector<std::byte> bytes(static_cast<std::size_t>(std::max(count, 1)));
        mpi::check(MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, tag_failure, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
        failure_header h;
        if (static_cast<std::size_t>(count) < sizeof h) throw internal_error("decentralised farm: a short end message");
        std::memcpy(&h, bytes.data(), sizeof h);
        const std::string text(reinterpret_cast<const char*>(bytes.data() + sizeof h), static_cast<std::size_t>(count) - sizeof h);
        if (h.failed == task_error_note) task_error(h.task, status.MPI_SOURCE, text);
        else end_of(status.MPI_SOURCE, h, text);
    }
}

outcome loss_host::finish(rank_end mine, bool gentle, const std::function<rank_end(chunk)>& compute_own,
                          const std::function<void()>& idle) {
    const int workers = ranks_ - first_;
    const auto own = [&](const rank_end& e) {  // rank 0's own end (its ended_ entry is set for good: not watched)
        if (e.failure) end_of(0, *e.failure, e.text);
    };
    own(mine);
    const bool computes = first_ == 0;
    for (double pause = 2e-6;;) {
        take_ends();
        watch(true);
        // The tasks nobody delivered, a piece to each living rank that has ended, which asks for the next one by
        // ending again (rank 0 computes them only when it is the only worker left).
        if (!failure_) hand_out();
        bool all = true;
        for (int w = 0; w < workers && all; ++w) all = ended_[static_cast<std::size_t>(w)] || watch_.lost(w);
        if (!all) {
            if (idle) idle();
            pause_for(pause, gentle);
            continue;
        }
        if (failure_) break;
        if (computes && watch_.living() == 1 && !watch_.lost(0)) {  // rank 0 alone: it computes what is queued
            if (const chunk c = watch_.next_piece(); c.count > 0) {
                if (failed_runs_.contains(c.first)) ++retried_;
                own(compute_own(c));
                continue;
            }
        }
        // Every living rank has ended, nothing queued: its flags are all in (each flushed them before its end), and
        // its notes of failed runs came before its end.
        mpi::check(MPI_Win_sync(window_.get()), "MPI_Win_sync");
        const std::span<const std::uint8_t> flags{reinterpret_cast<const std::uint8_t*>(window_.local(layout_.flags)),
                                                  static_cast<std::size_t>(tasks_)};
        if (!watch_.queue_missing(flags, [this](task_count t) { return failed_runs_.contains(t); })) break;
        // on_task_error retry: a task whose runs have all failed stops the farm (the lowest such task), naming the
        // rank of its last run and that run's error.
        for (const auto& [task, f] : failed_runs_)
            if (f.runs >= attempts_ && !flags[static_cast<std::size_t>(task)] && (!failure_ || task < failure_->task))
                failure_ = outcome{farm_outcome::kind::task_failed, f.last_rank, task, f.last_text, {}};
        if (failure_) break;
        if (watch_.living() == 0) {
            failure_ = outcome{farm_outcome::kind::worker_lost, watch_.lost_workers().back() + first_, -1,
                               "every worker presumed lost, with tasks left to compute", {}};
            break;
        }
        pause = 2e-6;
    }
    outcome o = failure_.value_or(outcome{});
    for (int w : watch_.lost_workers()) o.lost.push_back(w + first_);
    std::sort(o.lost.begin(), o.lost.end());
    send_outcome(comm_, o, o.lost);
    return o;
}

void loss_host::hand_out() {
    const int workers = ranks_ - first_;
    const bool computes = first_ == 0;
    std::vector<int> idle;  // living ranks that have ended (rank 0 computes only when it is the only worker left)
    for (int w = computes ? 1 : 0; w < workers; ++w)
        if (!watch_.lost(w) && ended_[static_cast<std::size_t>(w)]) idle.push_back(w);
    while (!idle.empty()) {
        const chunk c = watch_.next_piece();
        if (c.count == 0) return;
        // A task whose run failed goes to another rank than the one it last failed on, while another is living.
        auto to = idle.begin();
        const auto f = failed_runs_.find(c.first);
        if (f != failed_runs_.end()) {
            const int not_on = f->second.last_rank - first_;
            to = std::find_if(idle.begin(), idle.end(), [not_on](int w) { return w != not_on; });
            if (to == idle.end()) {
                if (watch_.living() - (computes ? 1 : 0) > 1) {  // another rank lives: it takes it once it has ended
                    watch_.put_back(c);
                    return;
                }
                to = idle.begin();
            }
            ++retried_;
        }
        const std::int64_t piece[2] = {c.first, c.count};
        std::vector<std::byte> bytes(sizeof piece);
        std::memcpy(bytes.data(), piece, sizeof piece);
        send_detached(comm_, std::move(bytes), *to + first_, tag_more);
        ended_[static_cast<std::size_t>(*to)] = 0;
        watch_.handed(*to, detail::now());
        idle.erase(to);
    }
}

std::vector<report_part> loss_host::lost_parts() const {
    std::vector<report_part> parts;
    for (int w : watch_.lost_workers()) {
        const claim_slot& s = slots_[static_cast<std::size_t>(w)];
        report_part p;
        p.workers.push_back({w + first_, s.done, {}, s.busy, 0.0});
        parts.push_back(std::move(p));
    }
    return parts;
}

outcome end_and_await_outcome(MPI_Comm comm, bool gentle, const std::function<rank_end()>& end,
                              const std::function<void(chunk)>& compute, const std::function<void()>& beat,
                              double interval) {
    for (;;) {
        const std::vector<std::byte> bytes = packed_end(end());  // rank 0 is never lost: a plain send
        mpi::check(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, tag_failure, comm), "MPI_Send");
        double next_beat = detail::now() + interval;
        for (double pause = 2e-6;;) {
            int flag = 0;
            MPI_Status status;
            mpi::check(MPI_Iprobe(0, MPI_ANY_TAG, comm, &flag, &status), "MPI_Iprobe");
            if (!flag) {
                if (detail::now() >= next_beat) beat(), next_beat = detail::now() + interval;
                pause_for(pause, gentle);
                continue;
            }
            if (status.MPI_TAG == tag_outcome) {
                outcome o;
                if (try_receive_outcome(comm, o, false)) return o;
                continue;
            }
            int count = 0;
            mpi::check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
            std::vector<std::byte> bytes(static_cast<std::size_t>(std::max(count, 1)));
            mpi::check(MPI_Recv(bytes.data(), count, MPI_BYTE, 0, status.MPI_TAG, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            if (status.MPI_TAG != tag_more || count != 2 * static_cast<int>(sizeof(std::int64_t))) continue;
            std::int64_t piece[2];
            std::memcpy(piece, bytes.data(), sizeof piece);
            compute({piece[0], piece[1]});
            break;  // it ends again
        }
    }
}

}  // namespace pfarm::detail
