// pfarm simulator: the simulated worker (simulated_worker.hpp): the compute model under load changes, the
// simulated monitors, and the worker_session-driven worker of the flat and hierarchical loops.
#include "simulated_worker.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

namespace pfarm::sim::model {

double compute_end(worker_load& load, double start, double base) {
    const auto& ch = load.changes;
    std::size_t i = load.cursor;
    while (i < ch.size() && ch[i].first <= start) ++i;
    load.cursor = i;
    double factor = i == 0 ? 1.0 : ch[i - 1].second;
    double t = start, left = base;
    for (;;) {
        const double next = i < ch.size() ? ch[i].first : std::numeric_limits<double>::infinity();
        const double capacity = (next - t) / factor;  // base seconds doable before the next change
        if (left <= capacity) return t + left * factor;
        left -= capacity;
        t = next;
        factor = ch[i].second;
        ++i;
    }
}

double factor_at(const worker_load& load, double t) {
    const auto it = std::upper_bound(load.changes.begin(), load.changes.end(), t,
                                     [](double v, const auto& c) { return v < c.first; });
    return it == load.changes.begin() ? 1.0 : std::prev(it)->second;
}

worker_compute::worker_compute(const platform& pl, const std::vector<double>& costs)
    : pl_(pl), prefix_(costs.size() + 1, 0.0), loads_(pl.task_times.size()) {
    for (std::size_t i = 0; i < costs.size(); ++i) prefix_[i + 1] = prefix_[i] + costs[i];
    for (const auto& c : pl.load_changes) loads_[static_cast<std::size_t>(c.worker)].changes.emplace_back(c.time, c.factor);
    for (auto& l : loads_)
        std::stable_sort(l.changes.begin(), l.changes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}

resource_sample worker_compute::sample(std::size_t j, double t) const {
    const double factor = factor_at(loads_[j], t);
    resource_sample s;
    s.availability = std::min(1.0, 1.0 / factor);
    s.run_queue = std::max(1.0, factor);
    s.latency = 2.0 * pl_.latency;
    s.benchmark = 1.0 / pl_.task_times[j];
    s.cores = 1;
    if (!pl_.monitors.empty()) {
        const resource_sample& scripted = pl_.monitors[j];
        if (scripted.availability) s.availability = *scripted.availability * *s.availability;
        if (scripted.latency) s.latency = scripted.latency;
        if (scripted.benchmark) s.benchmark = scripted.benchmark;
    }
    return s;
}

simulated_workers::simulated_workers(const platform& pl, const std::vector<double>& costs, const technique_needs& needs,
                                     bool prefetch, double server_cost, std::vector<worker_route> routes,
                                     event_queue& events)
    : pl_(pl), compute_(pl, costs), routes_(std::move(routes)), events_(events) {
    state_.reserve(pl.task_times.size());
    for (std::size_t j = 0; j < pl.task_times.size(); ++j)
        state_.emplace_back(worker_session_options{.prefetch = prefetch && !routes_[j].in_process,
                                                   .prefetch_lead = 2.0 * (2.0 * pl.latency + server_cost),
                                                   .readings_each = !needs.with_every_request.empty(),
                                                   .readings_calibration = !needs.with_calibration.empty()});
}

// The end of task k (0-based) of worker j's chunk, load changes included.
double simulated_workers::task_end(std::size_t j, task_count k) {
    const auto& s = state_[j];
    return compute_.end(j, s.session.current().first, k + 1, s.start);
}

// Worker j's chunk now ends at `end` (it started, or shrank): its chunk_end event.
void simulated_workers::set_end(std::size_t j, double end) {
    auto& s = state_[j];
    s.end = end;
    auto e = event::at(end, static_cast<int>(j), event::kind::chunk_end);
    e.generation = ++s.generation;
    events_.push(e);
}

// Prefetch: worker j asks ahead before task ask_at() of its chunk (worker_session.hpp): an event at the end of the
// task before it.
void simulated_workers::plan_boundary(std::size_t j) {
    const auto& s = state_[j];
    const task_count at = s.session.ask_at();
    if (at < 0) return;
    auto e = event::at(task_end(j, at - s.session.current().first - 1), static_cast<int>(j), event::kind::boundary);
    e.generation = s.generation;
    events_.push(e);
}

// Worker j's session acts at time t: its messages leave for its server (with the readings they must carry, taken
// as it sends), a chunk starts computing.
void simulated_workers::perform(std::size_t j, worker_session::actions actions, double t) {
    for (const worker_action& a : actions) {
        if (a.what == worker_action::kind::compute) {
            state_[j].start = t;
            set_end(j, task_end(j, a.work.count - 1));
            plan_boundary(j);
            continue;
        }
        const std::size_t slot = events_.post(a.message);
        if (a.readings) {
            request_message& m = events_.mail(slot);
            m.has_sample = true;
            m.sample = compute_.sample(j, t);
        }
        auto e = event::at(t + (routes_[j].in_process ? 0.0 : pl_.latency), static_cast<int>(j), event::kind::to_server);
        e.server = routes_[j].server;
        e.from = routes_[j].from;
        e.mail = slot;
        e.answer_first = a.message.what == request_message::kind::released;
        events_.push(e);
    }
}

double simulated_workers::task_end_at(std::size_t j, double t) {
    auto& s = state_[j];
    if (!s.session.computing() || t < s.start || t >= s.end) return t;
    task_count lo = 0, hi = s.session.current().count - 1;  // the first task whose end is at or after t
    while (lo < hi) {
        const task_count mid = lo + (hi - lo) / 2;
        if (task_end(j, mid) >= t) hi = mid;
        else lo = mid + 1;
    }
    return task_end(j, lo);
}

// A reclaim reaches victim j at time t. It answers between two tasks of the chunk it computes (the first boundary
// at or after t), its seconds per task measured on the chunk so far; computing its last task, it reads the reclaim
// when that ends (after its chunk_end, made earlier); computing nothing, at once.
void simulated_workers::victim_answers(std::size_t j, double t, const reply_message& asked) {
    auto& s = state_[j];
    if (!s.session.computing()) {
        perform(j, s.session.on_reclaim(asked, 0, 0.0), t);
        return;
    }
    const chunk c = s.session.current();
    task_count lo = 0, hi = c.count - 1;  // boundaries 0 .. count-2; hi = none left
    while (lo < hi) {
        const task_count mid = lo + (hi - lo) / 2;
        if (task_end(j, mid) >= t) hi = mid;
        else lo = mid + 1;
    }
    if (lo == c.count - 1) {  // in its last task
        auto again = event::at(s.end, static_cast<int>(j), event::kind::reclaim);
        again.reply = asked;
        events_.push(again);
        return;
    }
    const double boundary = task_end(j, lo);
    perform(j, s.session.on_reclaim(asked, c.first + lo + 1, (boundary - s.start) / static_cast<double>(lo + 1)), boundary);
    if (s.session.current().count != c.count) {
        set_end(j, task_end(j, s.session.current().count - 1));
        plan_boundary(j);  // the request ahead, planned again for the shorter chunk
    }
}

bool simulated_workers::handle(const event& e) {
    const auto j = static_cast<std::size_t>(e.who);
    switch (e.what) {
    case event::kind::to_worker:
        perform(j, state_[j].session.on_reply(e.reply), e.time);
        return true;
    case event::kind::chunk_end: {
        auto& s = state_[j];
        if (e.generation != s.generation) return true;  // its chunk shrank: a later chunk_end replaces this one
        perform(j, s.session.on_chunk_done(s.end - s.start, s.start, s.end), e.time);
        return true;
    }
    case event::kind::reclaim:
        victim_answers(j, e.time, e.reply);
        return true;
    case event::kind::boundary: {
        auto& s = state_[j];
        if (e.generation != s.generation || s.session.ask_at() < 0) return true;  // its chunk changed, or it asked
        perform(j, s.session.on_boundary(s.session.ask_at()), e.time);
        return true;
    }
    default:
        return false;
    }
}

}  // namespace pfarm::sim::model
