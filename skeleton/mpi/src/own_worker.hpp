// pfarm MPI engine, internal: a scheduling rank's own worker (farm_options::topology.farmer_computes), the in-process
// transport of a worker_session for the rank that also serves requests: the farmer's transport (farmer_transport.cpp:
// the flat farmer and the supermaster) and each master (hierarchical/master.cpp). It is worker 0 of that rank's
// session. It computes its chunk one task per compute_one() call, so the driver serves the other ranks' messages
// between two of its tasks; its requests wait here until the driver hands them to its session (serve()); the
// replies the session gives worker 0 come back through on_reply(), a reclaim answered at once (the rank is between
// two of its tasks). It asks nothing ahead: in process, a request costs nothing to wait for. Every rule (prefetch,
// reclaim, failure) is the session's.
#pragma once

#include "engine.hpp"
#include "quota_time.hpp"
#include "results.hpp"

#include "pfarm/worker_session.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <thread>

namespace pfarm::detail {

class own_worker {
public:
    /// The own worker of rank `rank` (its emulated slowdown); `clock` reads the farm's clock (rank 0's).
    own_worker(const task_kernel& kernel, const shared_setup& setup, sampler& monitors, int rank,
               std::function<double()> clock)
        : kernel_(kernel), setup_(setup), monitors_(monitors), rank_(rank), clock_(std::move(clock)),
          session_({.prefetch = false,
                    .prefetch_lead = 0.0,
                    .readings_each = setup.config.readings_each != 0,
                    .readings_calibration = setup.config.readings_calibration != 0}) {}

    /// Its first request (queued).
    void start() { perform(session_.start()); }

    /// A reply its session gave worker 0 (a reclaim included: answered now, between two of its tasks).
    void on_reply(const reply_message& r) {
        if (r.what == reply_message::kind::reclaim) {
            const task_count done = next_ - session_.current().first;
            perform(session_.on_reclaim(r, next_, done > 0 ? compute_ / static_cast<double>(done) : 0.0));
        } else {
            perform(session_.on_reply(r));
        }
    }

    bool computing() const noexcept { return session_.computing(); }
    chunk current() const noexcept { return session_.current(); }
    /// The task compute_one() runs next.
    task_count next() const noexcept { return next_; }

    /// Hands its queued requests, oldest first, to `hand` (the driver gives each to its session as worker 0's; a
    /// request with results carries them in results(), or in place). The session's answers may queue more, handed in
    /// the same call; a call made while handing (the driver's actions serve it again) returns at once.
    template <class Hand>
    void serve(Hand&& hand) {
        if (serving_ || queue_.empty()) return;  // called after every message the farmer handles
        serving_ = true;
        struct done {
            bool& flag;
            ~done() { flag = false; }
        } guard{serving_};
        while (!queue_.empty()) {
            const request_message m = std::move(queue_.front());
            queue_.pop_front();
            hand(m);
        }
    }

    /// The farm is aborting: the requests it queued go nowhere.
    void drop_requests() noexcept { queue_.clear(); }

    /// The results of the chunk it computed last, when they were not computed in place (compute_one's `out` null).
    chunk_results& results() noexcept { return results_; }

    /// Runs task next() of its chunk, its input at `input`, its fixed-size result into `out` (null: into results(),
    /// where results of any size always go). A task that throws becomes its session's failure. After the chunk's
    /// last task it sleeps the emulated slowdown owed (in slices of 0.2 ms, calling `serve` after each so the driver
    /// answers the other ranks meanwhile) and tells its session the chunk is done.
    void compute_one(const std::byte* input, std::byte* out, const std::function<void()>& serve) {
        const task_count i = next_;
        const chunk c = session_.current();
        if (i == c.first) {  // the chunk's first task
            compute_ = 0.0;
            quota_.begin();
            started_ = clock_();
            if (!out) results_.begin(kernel_, c.count);
        }
        const double start = now();
        quota_.mark();  // per task: the farming between two tasks is not the chunk's CPU time
        try {
            if (out) kernel_.run(i, input, out);
            else results_.run(i, i - c.first, input);
        } catch (const std::exception& e) {
            if (!task_error(i, c, out, e.what())) return;
        } catch (...) {
            if (!task_error(i, c, out, "unknown exception")) return;
        }
        compute_ += now() - start;
        quota_.add();
        if (++next_ < session_.current().first + session_.current().count) return;
        double extra = setup_.emulated.active() ? setup_.emulated.owed(rank_, started_, compute_) : 0.0;
        const double seconds = quota_.seconds(compute_) + extra;  // at least its CPU time over the quota (quota_time.hpp)
        while (extra > 0.0) {
            const double slice = std::min(extra, 2e-4), s0 = now();
            std::this_thread::sleep_for(std::chrono::duration<double>(slice));
            serve();
            if (!session_.computing() || session_.current().first != c.first) return;  // cancelled meanwhile (stragglers)
            extra -= now() - s0;
        }
        perform(session_.on_chunk_done(seconds, started_, clock_()));
    }

private:
    /// Task i of chunk c threw `what`: with on_task_error retry or skip, its outputs (at `out`, or in results()) become
    /// the fill, its session reports it, and true is returned (the chunk goes on); otherwise the farm fails.
    bool task_error(task_count i, chunk c, std::byte* out, const char* what) {
        if (setup_.config.task_errors == 0) {
            perform(session_.on_failure(i, what));
            return false;
        }
        if (!out) results_.fill(i - c.first);
        else if (kernel_.fill.size() == kernel_.out_bytes) std::memcpy(out, kernel_.fill.data(), kernel_.out_bytes);
        else std::memset(out, 0, kernel_.out_bytes);
        perform(session_.on_task_error(i, what));
        return true;
    }

    /// Its session's actions: a chunk to compute from its first task, or a request queued with the readings it
    /// must carry.
    void perform(worker_session::actions actions) {
        for (const worker_action& a : actions) {
            if (a.what == worker_action::kind::compute) {
                next_ = a.work.first;
                continue;
            }
            queue_.push_back(a.message);
            if (a.readings) {
                queue_.back().has_sample = true;
                queue_.back().sample = monitors_.read(a.calibration);
            }
        }
    }

    const task_kernel& kernel_;
    const shared_setup& setup_;
    sampler& monitors_;
    int rank_;
    std::function<double()> clock_;
    worker_session session_;
    std::deque<request_message> queue_;  ///< its requests, waiting for the session
    bool serving_ = false;               ///< serve() is handing them
    chunk_results results_;
    task_count next_ = 0;
    double compute_ = 0.0, started_ = 0.0;  ///< its chunk's compute time so far, its start (the farm's clock)
    quota_time quota_{setup_.quota_cores};  ///< its chunk's CPU time, under a CPU quota
};

}  // namespace pfarm::detail
