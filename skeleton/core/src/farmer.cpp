// pfarm scheduling core: the farmer's decisions (farmer.hpp says the protocol and its optional rules).
#include "pfarm/farmer.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace pfarm {

namespace {
/// The victim's part that `thieves` idle workers, each at `thief_seconds` per task, should take so that all finish
/// together if their times per task hold, kept within [1/3, 1 - 1/(3 x thieves)]: [1/3, 2/3] for one thief
/// (farmer::take_back says why).
double balanced_share(double victim_seconds, double thief_seconds, int thieves) {
    const double n = static_cast<double>(std::max(1, thieves));
    return std::clamp(n * victim_seconds / (n * victim_seconds + thief_seconds), 1.0 / 3.0, 1.0 - 1.0 / (3.0 * n));
}

/// The whole tasks in `share` x `tasks`: a share that is 2/3 up to rounding (paces fitted by the cost profile) of 3
/// tasks is 2 of them.
double whole_tasks(double tasks, double share) { return std::floor(tasks * share + 1e-9); }

}  // namespace

farmer::farmer(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk,
               int max_outstanding, bool reclaim, bool pool, const calibration_result* learned,
               double calibration_span, const candidate_predictor* predictor)
    : tasks_(pool ? 0 : tasks), min_chunk_(min_chunk), policy_(std::move(policy)), predictor_(predictor),
      max_outstanding_(max_outstanding),
      reclaim_(reclaim), pool_(pool), expected_(tasks) {
    if (max_outstanding < 1 || max_outstanding > (reclaim ? 2 : max_held))
        throw invalid_argument("max_outstanding", "is " + std::to_string(max_outstanding) + "; expected 1.." +
                                                      std::to_string(reclaim ? 2 : max_held) +
                                                      (reclaim ? " with reclaim" : ""));
    if (tasks < 1) throw invalid_argument("tasks", "is " + std::to_string(tasks) + "; expected >= 1");
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (min_chunk < 1)
        throw invalid_argument("min_chunk", "is " + std::to_string(min_chunk) + "; expected >= 1");
    if (!policy_) throw invalid_argument("technique", "is null");
    if (!(calibration_span >= 0.0) || !std::isfinite(calibration_span))
        throw invalid_argument("calibration_span", "is " + std::to_string(calibration_span) +
                                                       "; expected a finite value >= 0 (seconds)");
    workers_.resize(static_cast<std::size_t>(workers));
    if (reclaim) profile_ = cost_profile(tasks, workers);
    active_ = workers;
    if (const task_count c = policy_->constant_chunk(); c > 0) constant_ = std::max(c, min_chunk);
    span_ = pool ? 0.0 : calibration_span;
    calibration_mode_ = policy_->needs_calibration();
    if (calibration_mode_ == calibration_mode::none && span_ > 0.0 && policy_->learns_from_times())
        calibration_mode_ = calibration_mode::times_only;
    if (!pool && policy_->needs_calibration() != calibration_mode::none && learned &&
        learned->fitness.size() == static_cast<std::size_t>(workers)) {
        calibration_ = *learned;  // learned by an earlier farm of this loop: no calibration tasks
        policy_->start({tasks_, tasks_, workers, &*calibration_, predictor_});
        started_ = true;
    } else if (calibration_mode_ != calibration_mode::none) {
        phase_ = phase::calibrating;
        // More workers than tasks: only the first `tasks` workers calibrate; the rest are stopped at once.
        calibration_pending_ = pool ? workers : static_cast<int>(std::min<task_count>(tasks, workers));
        calibration_times_.assign(static_cast<std::size_t>(calibration_pending_), 0.0);
        calibration_samples_.assign(static_cast<std::size_t>(calibration_pending_), resource_sample{});
        // At most half the loop goes to calibration, and every worker that calibrates gets its first task.
        calibration_cap_ = std::max<task_count>(calibration_pending_, tasks / 2);
    } else if (!pool_) {  // pool mode: started by the first request that finds tasks in the pool
        policy_->start({tasks_, tasks_, workers, nullptr, predictor_});
        started_ = true;
    }
}

void farmer::add_tasks(chunk range) {
    if (!pool_) throw internal_error("farmer: add_tasks without pool mode");
    if (closed_) throw internal_error("farmer: add_tasks after close_pool");
    if (range.count < 1 || range.first < 0)
        throw invalid_argument("range", "is [" + std::to_string(range.first) + ", +" + std::to_string(range.count) +
                                            "); expected first >= 0 and count >= 1");
    if (!pool_ranges_.empty() && pool_ranges_.back().first + pool_ranges_.back().count == range.first)
        pool_ranges_.back().count += range.count;
    else
        pool_ranges_.push_back(range);
    tasks_ += range.count;
}

void farmer::close_pool() {
    if (!pool_) throw internal_error("farmer: close_pool without pool mode");
    closed_ = true;
}

chunk farmer::take_from_pool(task_count count) {
    chunk& front = pool_ranges_.front();
    const chunk c{front.first, std::min(count, front.count)};
    front.first += c.count;
    front.count -= c.count;
    if (front.count == 0) pool_ranges_.pop_front();
    next_index_ += c.count;
    return c;
}

void farmer::bad_worker(int worker) const {
    throw invalid_argument("worker", "is " + std::to_string(worker) + "; expected 0.." +
                                             std::to_string(workers() - 1));
}

decision farmer::assign(int worker, task_count first, task_count count, bool calibration_task, double now) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    const chunk c{first, count};
    w.assigned_at[w.held] = now;
    w.in_flight[w.held++] = c;
    ++w.version;
    w.reclaimable = reclaim_ && !calibration_task;  // a new chunk may be asked, even after a 0 answer
    return {decision::kind::assign, c, calibration_task};
}

inline void farmer::pop_oldest(worker_state& w) {
    // On every completion's path: two chunks at most (prefetch) shift without a loop; a master's deeper pipeline
    // (max_held) loops.
    w.in_flight[0] = w.in_flight[1];
    w.assigned_at[0] = w.assigned_at[1];
    if (w.held > 2) [[unlikely]]
        for (int i = 2; i < w.held; ++i) w.in_flight[i - 1] = w.in_flight[i], w.assigned_at[i - 1] = w.assigned_at[i];
    --w.held;
    w.in_flight[w.held] = {};
    ++w.version;
}

decision farmer::stop_worker(int worker) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    w.stopped = true;
    --active_;
    if (active_ == 0 && remaining() > 0) stranded();
    return {decision::kind::stop, {}, false};
}

decision farmer::later(int worker, double now) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    w.asks_again = true;
    w.later_at = now;
    return {decision::kind::later, {}, false};
}

void farmer::stranded() const {
    throw internal_error("farmer: technique '" + policy_->name() + "' stopped every worker with " +
                         std::to_string(remaining()) + " tasks unassigned");
}

decision farmer::request(int worker, double now, bool completing) {
    check_worker(worker);
    auto& w = workers_[static_cast<std::size_t>(worker)];
    w.asks_again = false;
    if (w.stopped) return {decision::kind::stop, {}, false};
    const int limit = phase_ == phase::calibrating ? 1 : max_outstanding_;
    if (w.held - (completing ? 1 : 0) >= limit || w.held >= max_held)
        throw internal_error("farmer: worker " + std::to_string(worker) + " asked for work while holding " +
                             std::to_string(w.held) + " chunk(s)");
    if (w.waiting_for_victim)
        throw internal_error("farmer: worker " + std::to_string(worker) + " asked for work while waiting for a reclaim");

    if (phase_ == phase::calibrating) {
        if (const std::optional<decision> d = calibration_request(worker, w, now)) return *d;
    }
    // Failed tasks, a lost worker's, a reclaim's pieces for the idle, before new ones.
    if (!retry_queue_.empty() || !returned_.empty() || !shares_.empty()) [[unlikely]] {
        if (const decision d = again_for(worker, now); d.what == decision::kind::assign) return d;
    }
    const task_count left = remaining();
    if (left == 0) {
        if (pool_ && !closed_)  // more is coming; one that asks ahead must not keep its results waiting for it
            return w.held > 0 ? later(worker, now) : decision{decision::kind::wait, {}, false};
        if (!reclaim_ && !stragglers()) {
            if (!retry_ && !loss_tolerant_) return stop_worker(worker);
            // Retry: one that asks ahead asks again with nothing in hand, when a failed task may be there for it.
            return w.held > 0 ? later(worker, now) : idle_end(worker);
        }
        // Stragglers: one that asks ahead asks again with nothing in hand, when it may take a piece of an overdue chunk.
        if (!reclaim_) return w.held == 0 ? rerun_or_stop(worker, now) : later(worker, now);
        // Prefetch: a worker still holding a chunk asks again once it is done, when it may take work back.
        return take_back(worker, now);
    }
    if (pool_ && !started_) {
        policy_->start({expected_, left, workers(), calibration(), predictor_});
        started_ = true;
    }
    if (reclaim_ && !pool_ && !stragglers() && !retry_ && !loss_tolerant_) [[unlikely]] {
        if (outrun(worker, now)) return w.held > 0 ? later(worker, now) : decision{decision::kind::wait, {}, false};
        // A worker far behind: the one that asks with nothing in hand is sent to take its unstarted tasks back, the
        // share reckoned for all the others (far_behind(), ask_for_all()).
        if (w.held - (completing ? 1 : 0) == 0)
            if (const int v = far_behind(worker, now); v >= 0) return ask_for_all(worker, v, now);
    }
    task_count wanted = policy_->next(worker, left);
    if (pool_ && wanted <= 0) {  // its round is handed out: a new round over the pool, and a chunk whatever it says
        policy_->start({expected_, left, workers(), calibration(), predictor_});
        wanted = std::max<task_count>(1, policy_->next(worker, left));
    }
    if (wanted <= 0) {  // the technique stops this worker; with reclaim, one holding a chunk may be asked for it
        if (reclaim_ && w.held > 0) return later(worker, now);
        if (loss_tolerant_) [[unlikely]] return past_share(worker, now);  // tasks may come back to it
        // With reclaim no worker stops while tasks are unassigned: the technique keeps them as the share of a worker
        // that has not asked yet (static, deal, the shares of n-*, one `auto` goes on with mid-loop), which may be
        // busy long after the others are idle. The idle worker takes a piece of them, as it would take that worker's
        // unstarted tasks back once every task is handed out.
        if (reclaim_) return hand_next(worker, piece_of(left), false, now);
        return stop_worker(worker);
    }
    const task_count count = std::min(left, std::max(wanted, min_chunk_));
    if (pool_) {
        const chunk c = take_from_pool(count);
        return assign(worker, c.first, c.count, false, now);
    }
    return hand_next(worker, count, false, now);
}

decision farmer::hand_next(int worker, task_count count, bool calibration, double now) {
    const task_count first = next_index_;
    next_index_ += count;
    return assign(worker, first, count, calibration, now);
}

double farmer::seconds_per_task(int worker) const {
    const auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.done_tasks > 0) return w.busy_seconds / static_cast<double>(w.done_tasks);
    double busy = 0.0;
    task_count done = 0;
    for (const auto& o : workers_) busy += o.busy_seconds, done += o.done_tasks;
    return done > 0 ? busy / static_cast<double>(done) : 0.0;  // 0: nobody has finished anything yet
}

double farmer::pace(int worker, chunk c) const {
    return profile_.knows(worker) ? profile_.seconds_per_task(worker, c) : seconds_per_task(worker);
}

double farmer::held_seconds(int worker, chunk& largest) const {
    const auto& w = workers_[static_cast<std::size_t>(worker)];
    double seconds = 0.0;
    for (int i = 0; i < w.held; ++i) {
        seconds += static_cast<double>(w.in_flight[i].count) * pace(worker, w.in_flight[i]);
        if (w.in_flight[i].count > largest.count) largest = w.in_flight[i];
    }
    return seconds;
}

template <class SecondsPer>
double farmer::others_finish(int worker, double now, SecondsPer seconds_per) const {
    const task_count left = remaining();
    const chunk rest{next_index_, left};
    struct capacity {
        double free, rate;
    };
    std::vector<capacity> them;
    double one_task = std::numeric_limits<double>::infinity();  // the least time of one task of the rest elsewhere
    for (int v = 0; v < workers(); ++v) {
        const auto& o = workers_[static_cast<std::size_t>(v)];
        // Only those holding a chunk: an idle one is told to wait by the same rule, or asks on its own.
        if (v == worker || o.held == 0 || o.stopped || o.lost || !profile_.knows(v)) continue;
        const double t = seconds_per(v, rest);
        if (!(t > 0.0)) continue;
        double held_time = 0.0;  // what it holds, from its hand-out; past it, guessed half-way (as take_back does)
        for (int i = 0; i < o.held; ++i) held_time += static_cast<double>(o.in_flight[i].count) * seconds_per(v, o.in_flight[i]);
        const double elapsed = now - o.assigned_at[0];
        them.push_back({now + (held_time >= elapsed ? held_time - elapsed : elapsed), 1.0 / t});
        one_task = std::min(one_task, t);
    }
    if (them.empty()) return std::numeric_limits<double>::infinity();
    // Their finish of the rest as a fluid, each from when it is free.
    std::sort(them.begin(), them.end(), [](const capacity& a, const capacity& b) { return a.free < b.free; });
    double rate = 0.0, done = 0.0, at = them.front().free, finish = 0.0;
    for (std::size_t i = 0;; ++i) {
        rate += them[i].rate;
        const double next = i + 1 < them.size() ? them[i + 1].free : std::numeric_limits<double>::infinity();
        finish = at + (static_cast<double>(left) - done) / rate;
        if (finish <= next) break;
        done += rate * (next - at);
        at = next;
    }
    // A task is not divided: the last one on the others may end up to one task's time past the fluid finish.
    return finish + one_task;
}

bool farmer::outrun(int worker, double now) const {
    // The end game (docs/skeleton.md "Reclaim"): a started task is never taken back, so a slow worker that takes one
    // of the last tasks may end the loop long after the others. It gets nothing while the others would finish every
    // unassigned task, after what they hold, before it would finish the least chunk. Judged twice, at the paces of
    // the loop's cost profile and at each worker's seconds per task so far, and only when both agree: with few
    // chunks completed the profile's fit may be far off, and seconds per task mistake cheap tasks for a fast worker.
    const task_count left = remaining();
    const int others = workers() - 1;
    if (others < 1 || !profile_.knows(worker) || !(fastest_ > 0.0)) return false;
    const chunk least{next_index_, std::min(left, min_chunk_)};
    const double alone = static_cast<double>(least.count) * seconds_per_task(worker);
    // Cheap bound first, so that a request far from the end costs O(1): the others cannot finish the rest sooner
    // than `others` workers at the least seconds per task any chunk took.
    if (static_cast<double>(left) * fastest_ / static_cast<double>(others) > alone + request_cost_) return false;
    // Whether the others finish the rest before `worker` finishes `least`, at `seconds_per(v, c)`.
    const auto sooner = [&](auto seconds_per) {
        const auto& w = workers_[static_cast<std::size_t>(worker)];
        double mine = now;
        for (int i = 0; i < w.held; ++i) mine += static_cast<double>(w.in_flight[i].count) * seconds_per(worker, w.in_flight[i]);
        mine += static_cast<double>(least.count) * seconds_per(worker, least);
        // Infinity when nobody else holds a chunk, whose completion would ask this worker again.
        return others_finish(worker, now, seconds_per) + request_cost_ < mine;
    };
    // Seconds per task first: the profile's paces may need a fit (O(bins cubed)) after each completed chunk.
    return sooner([this](int v, chunk) { return seconds_per_task(v); }) &&
           sooner([this](int v, chunk c) { return profile_.seconds_per_task(v, c); });
}

int farmer::far_behind(int thief, double now) {
    // One worker looked at per request, in turn, so that a request costs O(1) however many workers there are: a
    // worker that has taken more than twice what it holds, at its seconds per task so far and at its paces (far
    // slower than its history: a load came; at once past them, the guess below overstates what is left to one
    // just past its estimate), is guessed, as take_back does, to have as long again to go. If that is later than
    // the others would finish every unassigned task after what they hold (at both kinds of paces, as outrun()),
    // plus one of its tasks (it answers between tasks), it would end the loop last with tasks it has not started:
    // they are taken back now, while the others still have the pool, rather than once the pool runs dry.
    const int v = next_looked_at_;
    next_looked_at_ = (next_looked_at_ + 1) % workers();
    const auto& w = workers_[static_cast<std::size_t>(v)];
    if (v == thief || w.held == 0 || !w.reclaimable || w.thief >= 0 || w.lost || !profile_.knows(v)) return -1;
    const double elapsed = now - w.assigned_at[0];
    // Its seconds per task so far first: the profile's paces may need a fit (O(bins cubed)) after each chunk.
    task_count held = 0;
    for (int i = 0; i < w.held; ++i) held += w.in_flight[i].count;
    if (elapsed <= 2.0 * static_cast<double>(held) * seconds_per_task(v)) return -1;
    chunk largest{};
    const double held_time = held_seconds(v, largest);
    if (largest.count < 2 || !(held_time > 0.0) || elapsed <= 2.0 * held_time) return -1;
    const double its_task = pace(v, largest) * elapsed / held_time;  // at the pace it has shown at least
    const double end = now + elapsed;
    const double others =
        std::max(others_finish(v, now, [this](int o, chunk) { return seconds_per_task(o); }),
                 others_finish(v, now, [this](int o, chunk c) { return profile_.seconds_per_task(o, c); }));
    return std::isfinite(others) && end > others + its_task + request_cost_ ? v : -1;
}

decision farmer::take_back(int thief, double now) {
    // Paces are the seconds per task a worker is expected to take over given tasks, from the loop's cost profile
    // (cost_profile.hpp): a worker's seconds per task so far measure the tasks it happened to get as much as the
    // worker (a Mandelbrot's cheap edge columns make a slow worker look fast), the profile tells the two apart.
    // The share: the thief's part of the victim's unstarted tasks so that both finish together at their paces on
    // the victim's chunk, t_v / (t_v + t_thief), kept within [1/3, 2/3] so that one bad estimate does not hand a
    // thief most of a chunk (quality study: docs/quality.md). An idle thief asks for the n - 1 other workers idle
    // by the victim's answer too (thieves_by(): it answers after its current task, and one answer per thief would
    // feed one idle worker per task of a victim whose tasks have grown long): n thieves together at t_thief / n,
    // n t_v / (n t_v + t_thief) within [1/3, 1 - 1/(3n)], the answer cut into a piece for each (released()). The
    // victim: the worker whose chunk promises the thieves the largest gain, share x expected remaining time.
    // Expected remaining time = hand-out time + the time of the tasks held at its pace - now; a worker past that
    // estimate (slower than its history) is guessed to be half-way through, with as long again to go. Without any
    // history yet, chunks are ranked by their size and split in half.
    // A thief that still holds chunks (prefetch: it asks when it starts one) is busy for about its tasks held at
    // its pace: it takes back only what leaves the victim longer busy than itself, share x (victim's time left -
    // thief's), and otherwise gets `later`.
    const double thief_time = seconds_per_task(thief);
    const auto& asker = workers_[static_cast<std::size_t>(thief)];
    if (asker.held > 0 && thief_time == 0.0) return later(thief, now);  // nothing to judge by yet
    double busy = 0.0;
    for (int i = 0; i < asker.held; ++i)
        busy += static_cast<double>(asker.in_flight[i].count) * pace(thief, asker.in_flight[i]);
    const int thieves = busy > 0.0 ? 1 : thieves_by(thief, -1, now, now);
    int best = -1;
    double best_gain = 0.0, best_share = 0.5, best_thief_seconds = thief_time, best_t = 0.0;
    for (int v = 0; v < workers(); ++v) {
        const auto& w = workers_[static_cast<std::size_t>(v)];
        if (v == thief || w.held == 0 || !w.reclaimable || w.thief >= 0) continue;
        if (stragglers() && overdue_at(v) <= now) continue;  // overdue: re-executed, not asked between its slow tasks
        task_count held = 0;
        chunk largest{};
        for (int i = 0; i < w.held; ++i) {
            held += w.in_flight[i].count;
            if (w.in_flight[i].count > largest.count) largest = w.in_flight[i];
        }
        if (largest.count < 2) continue;
        double share = 0.5, gain = 0.0, thief_seconds = thief_time, t = 0.0;
        if (seconds_per_task(v) > 0.0) {
            // Expected remaining time of everything it holds; it gives back from one chunk, at most all of
            // it but one task.
            t = pace(v, largest);
            double held_time = 0.0;
            for (int i = 0; i < w.held; ++i)
                held_time += static_cast<double>(w.in_flight[i].count) * pace(v, w.in_flight[i]);
            const double elapsed = now - w.assigned_at[0];
            double left = held_time - elapsed;
            if (left <= 0.0 && held_time > 0.0) {
                // Past it: slower than its paces say, by at least elapsed / held_time. Guessed half-way, its paces
                // scaled to what it has shown: as long again to go. (Half its estimate, the alternative, stays
                // small for a worker whose tasks cost far more than its paces say, which is then never asked.)
                t *= 2.0 * elapsed / held_time;
                left = elapsed;
            }
            left -= busy;
            if (left <= 0.0) continue;
            if (thief_time > 0.0) {
                thief_seconds = pace(thief, largest);
                share = balanced_share(t, thief_seconds, thieves);
            }
            const double most = static_cast<double>(largest.count - 1);  // it keeps a task of the chunk it gives from
            if (std::min(whole_tasks(left / t, share), most) < 1.0) continue;  // expected to give back nothing
            gain = std::min(share * left, most * t);
            if (gain <= 2.0 * request_cost_) continue;
        } else {
            gain = static_cast<double>(held);
        }
        if (gain > best_gain)
            best = v, best_gain = gain, best_share = share, best_thief_seconds = thief_seconds, best_t = t;
    }
    if (best < 0) {
        if (asker.held > 0) return later(thief, now);
        // A chunk that is being asked already may have tasks left once it answers: wait for that answer
        // (the driver re-asks waiting workers after every released()) rather than stop for good.
        for (const auto& w : workers_)
            if (w.thief >= 0 && w.held > 0 && w.reclaimable) return {decision::kind::wait, {}, false};
        return stragglers() ? rerun_or_stop(thief, now) : idle_end(thief);
    }
    if (busy > 0.0) return ask(thief, best, best_share, best_thief_seconds, busy, 1, 1, now);
    // Its answer comes after the task it computes: those that will be idle by then share it too.
    const int n = best_t > 0.0 ? thieves_by(thief, best, now, now + best_t) : thieves;
    if (best_t > 0.0 && thief_time > 0.0) best_share = balanced_share(best_t, best_thief_seconds, n);
    return ask(thief, best, best_share, best_thief_seconds, 0.0, n, n, now);
}

int farmer::thieves_by(int thief, int victim, double now, double by) const {
    // Idle: holding nothing and waiting (not stopped, lost, or waiting for another victim's answer); or expected
    // to end what it holds by `by` at its paces (one past that estimate is guessed to have as long again to go,
    // as take_back reckons), once it has completed a chunk (before, its pace is the others' mean, which a slow
    // worker's first chunk belies).
    int n = 1;
    for (int v = 0; v < workers(); ++v) {
        const auto& o = workers_[static_cast<std::size_t>(v)];
        if (v == thief || v == victim || o.stopped || o.lost || o.waiting_for_victim) continue;
        if (o.held == 0) {
            ++n;
            continue;
        }
        if (!(by > now) || !profile_.knows(v)) continue;  // no pace of its own yet: not judged
        chunk largest{};
        const double held_time = held_seconds(v, largest);
        const double elapsed = now - o.assigned_at[0];
        if (now + (held_time > elapsed ? held_time - elapsed : elapsed) <= by) ++n;
    }
    return n;
}

decision farmer::ask_for_all(int thief, int victim, double now) {
    // The others share what it gives back as they share the pool: its share is for all of them, n t_v / (n t_v +
    // t_thief) of its unstarted tasks (balanced_share; at the pace it has shown, as take_back reckons one past its
    // estimate), and the one that asks takes them.
    chunk largest{};
    const double held_time = held_seconds(victim, largest);
    const double elapsed = now - workers_[static_cast<std::size_t>(victim)].assigned_at[0];
    const double t = pace(victim, largest) * 2.0 * elapsed / held_time;
    const double thief_seconds = seconds_per_task(thief) > 0.0 ? pace(thief, largest) : 0.0;
    const int thieves = std::max(1, active_ - 1);
    const double share = thief_seconds > 0.0 ? balanced_share(t, thief_seconds, thieves) : 0.5;
    return ask(thief, victim, share, thief_seconds, 0.0, thieves, 1, now);
}

decision farmer::ask(int thief, int victim, double share, double thief_seconds, double busy, int thieves,
                     int pieces, double now) {
    auto& v = workers_[static_cast<std::size_t>(victim)];
    v.thief = thief;
    v.asked_at = now;
    v.asked_version = v.version;
    v.asked_for_busy = busy > 0.0;
    v.asked_pieces = pieces;
    workers_[static_cast<std::size_t>(thief)].waiting_for_victim = true;
    decision d{decision::kind::reclaim, {}, false};
    d.victim = victim;
    d.share = share;
    d.thief_seconds = thief_seconds;
    d.thief_busy = busy;
    d.thieves = thieves;
    return d;
}

release_outcome farmer::released(int victim, chunk given, double now) {
    check_worker(victim);
    auto& v = workers_[static_cast<std::size_t>(victim)];
    if (v.thief < 0)
        throw internal_error("farmer: worker " + std::to_string(victim) + " answered a reclaim nobody asked for");
    if (given.count < 0) throw invalid_argument("given", "count is " + std::to_string(given.count) + "; expected >= 0");
    chunk* from = nullptr;  // the chunk whose end was given back; it keeps at least its first task
    if (given.count > 0) {
        for (int i = 0; i < v.held; ++i) {
            chunk& c = v.in_flight[i];
            if (given.first > c.first && given.first + given.count == c.first + c.count) from = &c;
        }
        if (!from)
            throw internal_error("farmer: worker " + std::to_string(victim) + " gave back tasks [" +
                                 std::to_string(given.first) + ", " + std::to_string(given.first + given.count) +
                                 "), which are not the end of a chunk it holds");
    }
    const int thief = v.thief;
    v.thief = -1;
    workers_[static_cast<std::size_t>(thief)].waiting_for_victim = false;
    workers_[static_cast<std::size_t>(thief)].answered_at = now;
    if (workers_[static_cast<std::size_t>(thief)].lost) [[unlikely]] {  // what it gives back goes back for the others
        if (from) {
            from->count -= given.count;
            ++v.version;
            returned_.push_back(given);
            returned_tasks_ += given.count;
        }
        return {-1, {decision::kind::stop, {}, false}};
    }
    if (!from) {
        // A thief still busy (it asked ahead) may be given nothing because it is busy: the victim keeps its tasks
        // for a later thief, and this one asks again with nothing in hand (`later`), or, when its results came in
        // meanwhile (a worker whose reply ahead is late sends them at once: worker_session.hpp), is judged again
        // now, idle. Only a victim asked for an idle thief that gave nothing had nothing unstarted: it is asked no
        // more until it gets a new chunk. (Judged by the thief's state at the answer instead, the victim of a busy
        // thief that has since sent its results would be retired with unstarted tasks left, and a slow victim would
        // keep its whole chunk to the end.)
        if (workers_[static_cast<std::size_t>(thief)].held > 0) return {thief, later(thief, now)};
        if (!v.asked_for_busy && v.version == v.asked_version) v.reclaimable = false;
        // Asked before every task was handed out (far_behind()): the thief asks as any worker would.
        if (remaining() > 0 && !pool_) return {thief, request(thief, now)};
        return {thief, idle_thief(thief, now)};
    }
    from->count -= given.count;
    ++v.version;
    ++reclaims_;
    reclaimed_tasks_ += given.count;
    // Given for the workers idle by the answer besides the thief too (take_back): a piece each; those waiting are
    // asked again after this answer, the others take theirs when they ask (again_for(): whole, before new tasks).
    const task_count pieces = workers_[static_cast<std::size_t>(thief)].held == 0
                                  ? std::min<task_count>(given.count, v.asked_pieces)
                                  : 1;
    const task_count base = given.count / pieces, extra = given.count % pieces;  // as even as whole tasks allow
    const task_count mine = base + (extra > 0 ? 1 : 0);
    task_count first = given.first + mine;
    for (task_count i = 1; i < pieces; ++i) {
        const task_count count = base + (i < extra ? 1 : 0);
        shares_.push_back({first, count});
        first += count;
    }
    return {thief, assign(thief, given.first, mine, false, now)};
}

chunk victim_gives(const decision& d, double victim_seconds, chunk current, task_count next_task, chunk prefetched) {
    const task_count in_current = std::max<task_count>(0, current.first + current.count - next_task);
    const task_count in_prefetched = std::max<task_count>(0, prefetched.count);
    const double share = victim_seconds > 0.0 && d.thief_seconds > 0.0 ? balanced_share(victim_seconds, d.thief_seconds, d.thieves)
                                                                        : d.share;
    double unstarted = static_cast<double>(in_current + in_prefetched);
    const double pace = victim_seconds > 0.0 ? victim_seconds : d.thief_seconds;
    if (d.thief_busy > 0.0 && pace > 0.0) unstarted -= d.thief_busy / pace;
    const auto wanted = static_cast<task_count>(whole_tasks(std::max(0.0, unstarted), share));
    const bool from_current = in_current >= in_prefetched;
    const chunk& c = from_current ? current : prefetched;
    const task_count count = std::min(wanted, from_current ? std::min(in_current, current.count - 1) : in_prefetched - 1);
    if (count <= 0) return {c.first + c.count, 0};
    return {c.first + c.count - count, count};
}

void farmer::set_request_cost(double seconds) {
    if (!(seconds >= 0.0) || !std::isfinite(seconds))
        throw invalid_argument("request_cost", "is " + std::to_string(seconds) + "; expected a finite value >= 0");
    request_cost_ = seconds;
}

void farmer::set_profile_bins(int bins) {
    if (bins < 1) throw invalid_argument("profile_bins", "is " + std::to_string(bins) + "; expected >= 1");
    if (completed_tasks() > 0) throw internal_error("farmer: set_profile_bins after a completion");
    if (reclaim_) profile_ = cost_profile(expected_, workers(), bins);
}

std::vector<int> farmer::thieves() const {
    std::vector<int> out;
    for (int w = 0; w < workers(); ++w)
        if (workers_[static_cast<std::size_t>(w)].waiting_for_victim) out.push_back(w);
    return out;
}

const completion& farmer::complete(int worker, double seconds, const resource_sample* sample, double finished,
                                   std::span<const task_count> failed) {
    check_worker(worker);
    if (!(seconds >= 0.0) || !std::isfinite(seconds))
        throw invalid_argument("seconds", "is " + std::to_string(seconds) + "; expected a finite value >= 0");
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.held == 0)
        throw internal_error("farmer: worker " + std::to_string(worker) + " completed a chunk it does not hold");
    if (w.cancelled)
        throw internal_error("farmer: worker " + std::to_string(worker) + " completed a chunk that was cancelled");
    const chunk c = w.in_flight[0];
    const task_count count = c.count;
    pop_oldest(w);
    completion_.deliver.clear();
    completion_.cancel.clear();
    task_count counted = count;  // tasks completed for the first time
    if (w.piece_of >= 0) {       // a piece of a chunk re-executed: the first results of its tasks
        rerun& r = rerun_by_id(w.piece_of);
        w.piece_of = -1;
        std::erase_if(r.out, [&](const auto& p) { return p.first == worker; });
        r.finished.push_back(c);
        r.done += count;
        completion_.deliver.push_back(c);
        if (r.done == r.work.count) {  // the pieces cover the chunk: its worker drops it (a lost one holds it no more)
            auto& v = workers_[static_cast<std::size_t>(r.victim)];
            if (!v.lost) {
                v.rerun_of = -1;
                v.cancelled = true;
                completion_.cancel.emplace_back(r.victim, r.work);
            }
            end_rerun(r.id);
        }
    } else if (w.rerun_of >= 0) {  // a chunk re-executed, its own results first: the tasks no piece delivered
        rerun& r = rerun_by_id(w.rerun_of);
        w.rerun_of = -1;
        std::sort(r.finished.begin(), r.finished.end(), [](chunk a, chunk b) { return a.first < b.first; });
        task_count at = c.first;
        for (const chunk& f : r.finished) {
            if (f.first > at) completion_.deliver.push_back({at, f.first - at});
            at = f.first + f.count;
        }
        if (at < c.first + c.count) completion_.deliver.push_back({at, c.first + c.count - at});
        counted = count - r.done;
        for (const auto& [holder, piece] : r.out) {  // the pieces still out are dropped
            auto& h = workers_[static_cast<std::size_t>(holder)];
            h.piece_of = -1;
            h.cancelled = true;
            completion_.cancel.emplace_back(holder, piece);
        }
        end_rerun(r.id);
    } else {
        completion_.deliver.push_back(c);
    }
    if (!failed.empty()) [[unlikely]] {
        if (!retry_) throw internal_error("farmer: failed tasks without retry");
        counted -= retry_failed(worker, failed);
    }
    w.free_at = finished;
    if (w.held == 0) w.idle_at = finished;
    completed_ += counted;
    w.busy_seconds += seconds;
    w.done_tasks += count;
    if (reclaim_) {
        profile_.record(worker, c, seconds);
        if (count > 0 && seconds > 0.0) fastest_ = std::min(fastest_, seconds / static_cast<double>(count));
    }
    if (phase_ == phase::calibrating && calibration_completed(worker, w, count, seconds, sample)) return completion_;
    // A technique not started yet learns nothing from a chunk of tasks that went back (a lost worker's: pool mode before
    // the pool's first chunk, or a loop whose calibration tasks were all of it).
    if (started_) [[likely]] policy_->completed(worker, c, std::max(seconds, min_seconds));
    return completion_;
}

void farmer::drop(int worker, double now) {
    check_worker(worker);
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (!w.cancelled || w.held == 0)
        throw internal_error("farmer: worker " + std::to_string(worker) + " dropped a chunk that was not cancelled");
    w.cancelled = false;
    pop_oldest(w);
    if (w.held == 0) w.idle_at = now;
}

void farmer::run_queue_changed(int worker, double queue) {
    check_worker(worker);
    if (!(queue >= 1.0) || !std::isfinite(queue))
        throw invalid_argument("run_queue", "is " + std::to_string(queue) + "; expected a finite value >= 1");
    policy_->run_queue_changed(worker, queue);
}

}  // namespace pfarm
