// pfarm scheduling core: the farmer's decisions that run work again (farmer.hpp "Stragglers", "Retry", "Lost
// workers"): overdue chunks re-executed on idle workers, failed tasks handed out again or listed (on_task_error), and
// the tasks of a lost worker handed out again (on_worker_loss).
#include "pfarm/farmer.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <sstream>
#include <string>

namespace pfarm {

void farmer::set_stragglers(const straggler_rule& rule) {
    if (rule.factor != 0.0 && (!(rule.factor > 1.0) || !std::isfinite(rule.factor)))
        throw invalid_argument("stragglers", "factor is " + std::to_string(rule.factor) +
                                                 "; expected 0 (off) or a finite value > 1");
    if (!(rule.slack >= 0.0) || !std::isfinite(rule.slack))
        throw invalid_argument("stragglers", "slack is " + std::to_string(rule.slack) + "; expected a finite value >= 0");
    if (rule.factor > 0.0 && pool_)
        throw invalid_argument("stragglers", "are not handled by a hierarchical master (pool mode)");
    if (rule.factor > 0.0 && max_outstanding_ > 2)
        throw invalid_argument("stragglers", "re-execute one of two chunks at most; max_outstanding is " +
                                                 std::to_string(max_outstanding_));
    straggle_ = rule;
}

double farmer::overdue_at(int v) const {
    const auto& x = workers_[static_cast<std::size_t>(v)];
    constexpr double never = std::numeric_limits<double>::infinity();
    if (x.held == 0 || x.cancelled || x.rerun_of >= 0 || x.piece_of >= 0 || x.thief >= 0) return never;
    const double t = seconds_per_task(v);
    if (t <= 0.0) return never;
    const double start = std::max(x.assigned_at[0], x.free_at);
    return start + straggle_.factor * static_cast<double>(x.in_flight[0].count) * t + straggle_.slack;
}

double farmer::straggler_deadline(double after) const {
    double at = std::numeric_limits<double>::infinity();
    if (!stragglers() || remaining() > 0) return at;
    for (int v = 0; v < workers(); ++v) {
        const double t = overdue_at(v);
        if (t > after) at = std::min(at, t);
    }
    return at;
}

farmer::rerun& farmer::rerun_by_id(int id) {
    for (auto& r : reruns_)
        if (r.id == id) return r;
    throw internal_error("farmer: no re-execution " + std::to_string(id));
}

void farmer::end_rerun(int id) {
    std::erase_if(reruns_, [id](const rerun& r) { return r.id == id; });
}

decision farmer::hand_piece(int worker, rerun& r, double now) {
    const task_count end = r.work.first + r.work.count;
    chunk c{r.next, std::min(r.piece, end - r.next)};
    if (!r.again.empty()) {  // a piece whose holder was lost goes first
        c = r.again.back();
        r.again.pop_back();
    } else {
        r.next += c.count;
    }
    r.out.emplace_back(worker, c);
    rerun_tasks_ += c.count;
    const decision d = assign(worker, c.first, c.count, false, now);
    auto& w = workers_[static_cast<std::size_t>(worker)];
    w.reclaimable = false;
    w.piece_of = r.id;
    return d;
}

decision farmer::rerun_or_stop(int worker, double now) {
    for (auto& r : reruns_)  // pieces of a chunk being re-executed are left
        if (r.next < r.work.first + r.work.count || !r.again.empty()) return hand_piece(worker, r, now);
    int late = -1;
    double most = 0.0, first = std::numeric_limits<double>::infinity();
    for (int v = 0; v < workers(); ++v) {
        if (v == worker) continue;
        const double at = overdue_at(v);
        first = std::min(first, at);
        if (at <= now && (late < 0 || now - at > most)) late = v, most = now - at;
    }
    if (late >= 0) {
        auto& v = workers_[static_cast<std::size_t>(late)];
        rerun r;
        r.id = next_rerun_id_++;
        r.victim = late;
        r.work = v.in_flight[0];
        r.next = r.work.first;
        const auto helpers = static_cast<task_count>(std::max(1, active_ - 1));
        r.piece = std::max(min_chunk_, (r.work.count + helpers - 1) / helpers);
        v.rerun_of = r.id;
        v.reclaimable = false;
        ++reruns_started_;
        reruns_.push_back(std::move(r));
        return hand_piece(worker, reruns_.back(), now);
    }
    if (first < std::numeric_limits<double>::infinity()) return {decision::kind::wait, {}, false};  // asked again later
    return idle_end(worker);
}

decision farmer::retry_for(int worker, double now) {
    bool others = false;  // another worker that has not stopped may take what this one failed
    for (int v = 0; v < workers() && !others; ++v) others = v != worker && !workers_[static_cast<std::size_t>(v)].stopped;
    for (auto it = retry_queue_.begin(); it != retry_queue_.end(); ++it) {
        if (it->last == worker && others) continue;
        const task_count task = it->task;
        retry_queue_.erase(it);
        ++retried_;
        auto& w = workers_[static_cast<std::size_t>(worker)];
        const decision d = assign(worker, task, 1, false, now);
        w.reclaimable = false;  // one task: nothing to give back
        return d;
    }
    return {decision::kind::stop, {}, false};
}

decision farmer::idle_end(int worker) {
    if (!retry_ && !loss_tolerant_) return stop_worker(worker);
    // Queued tasks left here are another (running) worker's to take; a chunk in flight may still fail tasks, or be
    // lost with its worker.
    if (!retry_queue_.empty()) return {decision::kind::wait, {}, false};
    for (int v = 0; v < workers(); ++v) {  // a chunk cancelled (computed elsewhere) fails nothing more
        const auto& o = workers_[static_cast<std::size_t>(v)];
        if (v != worker && o.held > (o.cancelled ? 1 : 0)) return {decision::kind::wait, {}, false};
    }
    return stop_worker(worker);
}

void farmer::set_loss_tolerant(bool on) {
    loss_tolerant_ = on;
    if (on) constant_ = 0;  // upcoming() knows no chunk ahead: a lost worker's tasks may go first
}

double farmer::loss_pace(int worker, double slack) const {
    const auto& w = workers_[static_cast<std::size_t>(worker)];
    double busy = 0.0;
    task_count done = 0;
    for (const auto& o : workers_) busy += o.busy_seconds, done += o.done_tasks;
    const auto j = static_cast<std::size_t>(worker);
    const std::optional<double> learned =
        calibration_ && j < calibration_->times.size() ? std::optional<double>(calibration_->times[j]) : std::nullopt;
    return pfarm::loss_pace(w.busy_seconds, w.done_tasks, busy, done, learned, slack);
}

double farmer::silent_past(int worker, const worker_loss_rule& rule) const {
    const auto& x = workers_.at(static_cast<std::size_t>(worker));
    // A thief waiting for its victim's answer waits for the farmer (it may hold back its results for that reply): it
    // owes nothing until answered, and its chunk's deadline runs again from then.
    if (x.lost || x.waiting_for_victim) return std::numeric_limits<double>::infinity();
    if (x.held > 0) {
        const double start = std::max({x.assigned_at[0], x.free_at, x.answered_at, x.heard_at});
        return loss_deadline(rule, start, x.in_flight[0].count, loss_pace(worker, rule.slack));
    }
    // Holding nothing, it owes a message at once, from when it came to hold nothing or was asked for it, whichever
    // is later: its answer to a reclaim it crossed with its last results, or the request `later` asked for.
    double due = std::numeric_limits<double>::infinity();
    if (x.thief >= 0) due = std::max(x.asked_at, x.idle_at);
    if (x.asks_again) due = std::min(due, std::max(x.later_at, x.idle_at));
    return loss_deadline(rule, due, 0, 0.0);
}

release_outcome farmer::lose(int worker, double now) {
    release_outcome owed;
    owed.thief = forsake(worker, now);
    if (owed.thief >= 0) owed.answer = owed_answer(owed.thief, now);
    return owed;
}

std::vector<release_outcome> farmer::lose(std::span<const int> lost, double now) {
    std::vector<int> thieves;
    for (const int worker : lost)
        if (const int thief = forsake(worker, now); thief >= 0) thieves.push_back(thief);
    std::vector<release_outcome> owed;
    for (const int thief : thieves)
        if (!workers_[static_cast<std::size_t>(thief)].lost) owed.push_back({thief, owed_answer(thief, now)});
    return owed;
}

decision farmer::owed_answer(int thief, double now) {
    // Idle, it takes the tasks that went back first, as request() hands them (it may be the only worker left).
    return workers_[static_cast<std::size_t>(thief)].held > 0 ? later(thief, now) : idle_thief(thief, now);
}

int farmer::forsake(int worker, double now) {
    check_worker(worker);
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.lost) return -1;
    if (!loss_tolerant_) throw internal_error("farmer: lose() without loss tolerance");
    w.lost = true;
    ++lost_count_;
    for (int i = 0; i < w.held; ++i) {
        const chunk c = w.in_flight[i];
        if (i == 0 && (w.cancelled || w.rerun_of >= 0)) continue;  // computed elsewhere, or being re-executed there
        if (i == 0 && w.piece_of >= 0) {  // a piece of a re-execution: that re-execution hands it out again
            rerun& r = rerun_by_id(w.piece_of);
            std::erase_if(r.out, [worker](const auto& p) { return p.first == worker; });
            r.again.push_back(c);
            continue;
        }
        returned_.push_back(c);
        returned_tasks_ += c.count;
    }
    for (int i = 0; i < w.held; ++i) w.in_flight[i] = {};
    w.held = 0;
    ++w.version;
    w.cancelled = false, w.rerun_of = -1, w.piece_of = -1, w.reclaimable = false;
    w.waiting_for_victim = false;  // a thief: its victim's answer goes back (released())
    // Lost before the barrier, it leaves the calibration (finish_calibration()), which no longer waits for it.
    if (phase_ == phase::calibrating && !w.calibrated && worker < static_cast<int>(calibration_times_.size())) {
        w.calibrated = true;
        if (--calibration_pending_ == 0) finish_calibration();
    }
    if (!w.stopped) {
        w.stopped = true;
        --active_;
    }
    int owed = -1;
    if (w.thief >= 0 && workers_[static_cast<std::size_t>(w.thief)].lost) {
        w.thief = -1;  // a thief lost before it: answered nothing
    } else if (w.thief >= 0) {  // a victim asked for a reclaim: its thief is answered as if it gave nothing
        owed = w.thief;
        w.thief = -1;
        auto& t = workers_[static_cast<std::size_t>(owed)];
        t.waiting_for_victim = false;
        t.answered_at = now;
    }
    return owed;
}

task_count farmer::piece_of(task_count count) const { return returned_piece(count, active_, min_chunk_); }

task_count returned_piece(task_count count, int workers, task_count min_chunk) {
    const auto share = static_cast<task_count>(std::max(1, workers));
    return std::min(count, std::max(min_chunk, (count + share - 1) / share));
}

decision farmer::again_for(int worker, double now) {
    if (!retry_queue_.empty())
        if (const decision d = retry_for(worker, now); d.what == decision::kind::assign) return d;
    if (!returned_.empty()) return hand_returned(worker, now);
    if (!shares_.empty()) {  // a piece of a reclaim's answer, cut for the idle (released())
        const chunk c = shares_.front();
        shares_.pop_front();
        return assign(worker, c.first, c.count, false, now);
    }
    return {decision::kind::stop, {}, false};
}

decision farmer::idle_thief(int thief, double now) {
    if (const decision d = again_for(thief, now); d.what == decision::kind::assign) return d;
    return take_back(thief, now);
}

decision farmer::past_share(int worker, double now) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.held > 0) return later(worker, now);  // it asks again with nothing in hand
    if (lost_count_ > 0) {  // a share the technique keeps for a lost worker would be nobody's: a piece of what is left
        return hand_next(worker, piece_of(remaining()), false, now);
    }
    // Before a loss the tasks left are another worker's share: it waits, in case that worker is lost. Unless nobody
    // is left to take them (every other worker stopped, or answered 0 and idle): the technique stranded them.
    w.drained = true;
    for (int v = 0; v < workers(); ++v) {
        const auto& o = workers_[static_cast<std::size_t>(v)];
        if (v != worker && !o.stopped && (!o.drained || o.held > 0)) return {decision::kind::wait, {}, false};
    }
    stranded();
}

decision farmer::hand_returned(int worker, double now) {
    chunk& front = returned_.front();
    const task_count piece = piece_of(front.count);
    const chunk c{front.first, piece};
    front.first += piece;
    front.count -= piece;
    if (front.count == 0) returned_.pop_front();
    return assign(worker, c.first, c.count, false, now);
}

worker_loss_rule parse_worker_loss_rule(const std::string& text, const std::string& argument) {
    worker_loss_rule r;
    const std::string expected = "; expected off, stop, continue, stop=S or continue=S (S: seconds of silence past a "
                                 "chunk's expected end before its worker is presumed lost, > 0)";
    const auto eq = text.find('=');
    const std::string word = text.substr(0, eq);
    if (word == "off" && eq == std::string::npos) return r;
    if (word == "stop") r.what = worker_loss_rule::kind::stop;
    else if (word == "continue") r.what = worker_loss_rule::kind::go_on;
    else throw invalid_argument(argument, "is '" + text + "'" + expected);
    if (eq != std::string::npos) {
        const std::string n = text.substr(eq + 1);
        char* end = nullptr;
        const double s = n.empty() ? -1.0 : std::strtod(n.c_str(), &end);
        if (n.empty() || end != n.c_str() + n.size() || !(s > 0.0) || !std::isfinite(s))
            throw invalid_argument(argument, "is '" + text + "'" + expected);
        r.slack = s;
    }
    return r;
}

std::string to_string(const worker_loss_rule& rule) {
    std::ostringstream s;
    s << rule.slack;
    switch (rule.what) {
    case worker_loss_rule::kind::off: return "off";
    case worker_loss_rule::kind::stop: return "stop=" + s.str();
    case worker_loss_rule::kind::go_on: return "continue=" + s.str();
    }
    return "off";
}

void check_worker_loss_rule(const worker_loss_rule& rule, const std::string& argument) {
    const int what = static_cast<int>(rule.what);
    if (what < 0 || what > 2)
        throw invalid_argument(argument, "kind is " + std::to_string(what) + "; expected off, stop or continue");
    if (!(rule.factor > 1.0) || !std::isfinite(rule.factor))
        throw invalid_argument(argument, "factor is " + std::to_string(rule.factor) + "; expected a finite value > 1");
    if (!(rule.slack > 0.0) || !std::isfinite(rule.slack))
        throw invalid_argument(argument, "slack is " + std::to_string(rule.slack) + "; expected a finite value > 0 (seconds)");
}

double loss_pace(double busy, task_count done, double all_busy, task_count all_done, std::optional<double> learned,
                 double slack) {
    // Unlike a scheduling pace, a time of 0 measured (a timer too coarse for the tasks) is a pace: the deadline is
    // then the slack alone. Before any task has been timed there is no pace to judge by, and a chunk's deadline must
    // still come (a worker that dies in its first chunk, with no other to time a task, would be waited for for ever):
    // a time learned by an earlier farm of the loop, else the slack per task.
    if (done > 0) return busy / static_cast<double>(done);
    if (all_done > 0) return all_busy / static_cast<double>(all_done);
    if (learned) return *learned;
    return slack;
}

double loss_deadline(const worker_loss_rule& rule, double since, task_count held, double pace) {
    return since + rule.factor * (static_cast<double>(held) * pace) + rule.slack;
}

task_count farmer::retry_failed(int worker, std::span<const task_count> failed) {
    task_count queued = 0;
    for (const task_count t : failed) {
        // Only a task whose results this completion would deliver failed for good here (a re-executed chunk's other
        // copy may have delivered it already).
        auto& d = completion_.deliver;
        const auto in = std::find_if(d.begin(), d.end(), [t](chunk c) { return t >= c.first && t < c.first + c.count; });
        if (in == d.end()) continue;
        const chunk c = *in;
        const auto at = d.erase(in);
        std::vector<chunk> parts;
        if (t > c.first) parts.push_back({c.first, t - c.first});
        if (t + 1 < c.first + c.count) parts.push_back({t + 1, c.first + c.count - t - 1});
        d.insert(at, parts.begin(), parts.end());
        const int n = ++failures_[t];
        retry_queue_.push_back({t, n, worker});
        ++queued;
    }
    return queued;
}

int farmer::failures_of(task_count task) const {
    const auto it = failures_.find(task);
    return it == failures_.end() ? 0 : it->second;
}

task_error_rule parse_task_error_rule(const std::string& text, const std::string& argument) {
    task_error_rule r;
    if (text == "stop") return r;
    if (text == "skip") {
        r.what = task_error_rule::kind::skip;
        return r;
    }
    const std::string expected = "; expected stop, skip, retry or retry=N (N attempts in all, 2.." +
                                 std::to_string(task_error_rule::max_attempts) + ")";
    if (text == "retry") {
        r.what = task_error_rule::kind::retry;
        return r;
    }
    if (text.rfind("retry=", 0) == 0) {
        const std::string n = text.substr(6);
        const bool digits = !n.empty() && n.size() <= 9 && n.find_first_not_of("0123456789") == std::string::npos;
        const long attempts = digits ? std::stol(n) : -1;
        if (attempts >= 2 && attempts <= task_error_rule::max_attempts) {
            r.what = task_error_rule::kind::retry;
            r.attempts = static_cast<int>(attempts);
            return r;
        }
    }
    throw invalid_argument(argument, "is '" + text + "'" + expected);
}

std::string to_string(const task_error_rule& rule) {
    switch (rule.what) {
    case task_error_rule::kind::stop: return "stop";
    case task_error_rule::kind::skip: return "skip";
    case task_error_rule::kind::retry: return "retry=" + std::to_string(rule.attempts);
    }
    return "stop";
}

void check_task_error_rule(const task_error_rule& rule, const std::string& argument) {
    const int what = static_cast<int>(rule.what);
    if (what < 0 || what > 2)
        throw invalid_argument(argument, "kind is " + std::to_string(what) + "; expected stop, retry or skip");
    if (rule.what == task_error_rule::kind::retry && (rule.attempts < 2 || rule.attempts > task_error_rule::max_attempts))
        throw invalid_argument(argument, "retry attempts are " + std::to_string(rule.attempts) + "; expected 2.." +
                                             std::to_string(task_error_rule::max_attempts) + " runs of a task in all");
}

}  // namespace pfarm
