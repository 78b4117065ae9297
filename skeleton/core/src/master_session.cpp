// pfarm scheduling core: the master session (master_session.hpp says what it connects and the rules).
#include "pfarm/master_session.hpp"

#include "pfarm/error.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pfarm {

namespace {
farmer_session_options pooled(farmer_session_options o) {
    o.pool = true;
    return o;
}
}  // namespace

master_session::master_session(int workers, std::unique_ptr<technique> policy, const master_session_options& options)
    : group_(options.expected, workers, std::move(policy), pooled(options.group)),
      up_(worker_session_options{.prefetch = true,
                                 .prefetch_lead = 0.0,  // it asks at ask_ahead() only (depth > 2)
                                 .depth = master_depth,
                                 .readings_each = options.readings_each,
                                 .readings_calibration = options.readings_calibration}),
      powers_(options.powers) {
    if (powers_.empty()) powers_.assign(static_cast<std::size_t>(workers), 1.0);
    if (static_cast<int>(powers_.size()) != workers)
        throw invalid_argument("powers", "has " + std::to_string(powers_.size()) + " values; expected one per worker (" +
                                             std::to_string(workers) + ")");
    for (double v : powers_)
        if (!(v > 0.0) || !std::isfinite(v))
            throw invalid_argument("powers", "holds " + std::to_string(v) + "; expected finite values > 0");
    latest_.resize(static_cast<std::size_t>(workers));
    if (options.group.worker_loss.what != worker_loss_rule::kind::off) keep_alive_ = options.group.worker_loss.slack / 2.0;
}

double master_session::keep_alive_due() const {
    if (keep_alive_ == 0.0 || held_.empty() || up_.ended() || failure_sent_) return std::numeric_limits<double>::infinity();
    return last_up_ + keep_alive_;
}

double master_session::deadline() const { return std::min(group_.deadline(), keep_alive_due()); }

void master_session::take_group(const std::vector<farmer_action>& actions) {
    for (const farmer_action& a : actions) {
        master_action out;
        out.worker = a.worker;
        switch (a.what) {
        case farmer_action::kind::deliver:
            credit(a.results, out.into);
            out.what = master_action::kind::deliver;
            out.results = a.results;
            break;
        case farmer_action::kind::send:
            out.what = master_action::kind::send;
            out.reply = a.reply;
            break;
        case farmer_action::kind::park:
            out.what = master_action::kind::park;
            break;
        }
        actions_.push_back(std::move(out));
    }
}

void master_session::take_up(worker_session::actions actions) {
    for (const worker_action& a : actions) {
        if (a.what == worker_action::kind::compute) continue;  // its tasks joined the pool when the reply came
        master_action out;
        out.what = master_action::kind::up;
        out.message = a.message;
        if (a.readings) {
            out.message.has_sample = true;
            out.message.sample = readings();
        }
        if (a.message.done.count > 0) {  // the chunk's results go up: it leaves the ledger, its attachment with them
            const auto h = std::find_if(held_.begin(), held_.end(), [&](const held_chunk& c) { return c.work == a.message.done; });
            if (h == held_.end() || h->done != h->work.count)
                throw internal_error("master session: the results of [" + std::to_string(a.message.done.first) + ", +" +
                                     std::to_string(a.message.done.count) + ") go up, " +
                                     (h == held_.end() ? "a chunk it does not hold" : "not all of them in"));
            out.attachment = std::move(h->attachment);
            held_.erase(h);
        }
        ++up_messages_;
        last_up_ = now_;
        if (a.message.what == request_message::kind::ask) {
            ++up_requests_;
            if (a.message.done.count > 0) ++merged_;
        }
        actions_.push_back(std::move(out));
    }
}

void master_session::credit(chunk results, std::vector<held_chunk>& into) {
    // A worker's chunk may span two of its chunks when they follow each other (the pool merges them).
    task_count credited = 0;
    for (held_chunk& h : held_) {
        const task_count lo = std::max(results.first, h.work.first);
        const task_count hi = std::min(results.first + results.count, h.work.first + h.work.count);
        if (hi <= lo) continue;
        h.done += hi - lo, credited += hi - lo;
        into.push_back(h);
    }
    if (credited == results.count) return;
    throw internal_error("master session: results for [" + std::to_string(results.first) + ", +" +
                         std::to_string(results.count) + ") belong to no chunk it holds");
}

task_count master_session::next_unhanded(const chunk& c) const {
    // The pool hands out in the order the chunks came, so what is left of `c` is its end.
    task_count left = 0;
    for (const chunk& r : group_.decisions().pool()) {
        const task_count lo = std::max(r.first, c.first), hi = std::min(r.first + r.count, c.first + c.count);
        if (hi > lo) left += hi - lo;
    }
    return c.first + c.count - left;
}

bool master_session::refill_due() const {
    // The next chunk is due once the hand-out has reached the newest chunk held (the first one: once half of it is
    // handed out), whether the older chunks' results are in or not.
    const chunk& newest = held_.back().work;
    const task_count left = newest.first + newest.count - next_unhanded(newest);  // its tasks still in the pool
    if (pool_left() != left) return false;                                        // an older chunk is still served
    return received_.size() > 1 || left <= std::max<task_count>(1, newest.count / 2);
}

void master_session::settle(double now) {
    while (up_.computing() && !held_.empty() && !up_.ended()) {
        const held_chunk& h = held_.front();
        if (h.work != up_.current())
            throw internal_error("master session: the up session computes a chunk it does not hold first");
        const bool due = refill_due() && !up_.request_out();
        if (h.done != h.work.count) {  // its last results are still coming; the refill does not wait for them
            if (due) take_up(up_.ask_ahead());
            return;
        }
        // Every result of its oldest chunk is in: they go up with the next request, now when it is due, or at once
        // when no request will come (a stop came); else they wait for it.
        if (up_.asks_ahead()) {
            if (!due) return;
            take_up(up_.ask_ahead(true));
        }
        // It stays in the ledger until its results go up: with this event's message, or with the one the reply asked
        // ahead brings (take_up).
        const double arrived = h.arrived;
        take_up(up_.on_chunk_done(now - arrived, arrived, now));
    }
}

void master_session::read(int worker, const request_message& m) {
    if (!m.has_sample || worker < 0 || worker >= static_cast<int>(latest_.size())) return;
    resource_sample& s = latest_[static_cast<std::size_t>(worker)];
    if (m.sample.run_queue) s.run_queue = m.sample.run_queue;
    if (m.sample.availability) s.availability = m.sample.availability;
    if (m.sample.benchmark) s.benchmark = m.sample.benchmark;
    if (m.sample.latency) s.latency = m.sample.latency;
}

resource_sample master_session::readings() const {
    double power = 0.0, available = 0.0, availability = 0.0, benchmark = 0.0;
    double latency = -1.0;
    bool every_benchmark = true;
    for (std::size_t j = 0; j < latest_.size(); ++j) {
        const resource_sample& s = latest_[j];
        power += powers_[j];
        available += powers_[j] / std::max(1.0, s.run_queue.value_or(1.0));
        availability += s.availability.value_or(1.0);
        if (s.benchmark) benchmark += *s.benchmark;
        else every_benchmark = false;
        if (s.latency) latency = std::max(latency, *s.latency);
    }
    resource_sample out;
    out.run_queue = power / available;
    out.availability = availability / static_cast<double>(latest_.size());
    if (every_benchmark) out.benchmark = benchmark;
    if (latency >= 0.0) out.latency = latency;
    out.cores = static_cast<int>(latest_.size());
    return out;
}

void master_session::report_failure() {
    if (failure_sent_ || up_.ended()) return;
    const farm_outcome& o = group_.outcome();
    if (o.what != farm_outcome::kind::task_failed && o.what != farm_outcome::kind::worker_failed &&
        o.what != farm_outcome::kind::farmer_failed && o.what != farm_outcome::kind::worker_lost)
        return;
    failure_sent_ = true;
    // The worker's task and text go up unchanged; whose failure it was is failed_worker() (a driver names it by its
    // own address, an MPI rank, as the flat farmer does).
    failed_worker_ = o.what == farm_outcome::kind::farmer_failed ? -1 : o.worker;
    take_up(up_.on_failure(o.what == farm_outcome::kind::task_failed ? o.task : -1, o.text));
}

const std::vector<master_action>& master_session::start(double now) {
    actions_.clear();
    now_ = now;
    take_up(up_.start());
    settle(now);
    return actions_;
}

const held_chunk* master_session::holding(task_count task) const noexcept {
    for (const held_chunk& h : held_)
        if (task >= h.work.first && task < h.work.first + h.work.count) return &h;
    return nullptr;
}

const std::vector<master_action>& master_session::on_reply(const reply_message& r, double now, chunk_attachment attachment) {
    actions_.clear();
    now_ = now;
    switch (r.what) {
    case reply_message::kind::abort:
        take_group(group_.abort("the supermaster aborted the farm"));
        take_up(up_.on_reply(r));
        return actions_;
    case reply_message::kind::reclaim:
        throw internal_error("master session: a reclaim from the supermaster (there is no reclaim between masters)");
    case reply_message::kind::assign:
        held_.push_back({r.work, 0, now, std::move(attachment)});
        received_.push_back(r.work.count);
        take_group(group_.add_tasks(r.work, now));
        break;
    case reply_message::kind::stop:
        take_group(group_.close_pool(now));
        break;
    case reply_message::kind::cancel:  // a hierarchical farm handles no stragglers (the MPI engine refuses them)
        throw internal_error("master session: a cancel from the supermaster");
    case reply_message::kind::later:
        break;
    }
    take_up(up_.on_reply(r));
    settle(now);
    return actions_;
}

const std::vector<master_action>& master_session::on_message(int worker, const request_message& m, double now,
                                                             double arrived) {
    actions_.clear();
    now_ = now;
    read(worker, m);
    take_group(group_.on_message(worker, m, now, arrived));
    report_failure();
    settle(now);
    return actions_;
}

const std::vector<master_action>& master_session::on_timer(double now) {
    actions_.clear();
    now_ = now;
    take_group(group_.on_timer(now));
    report_failure();
    settle(now);
    if (now >= keep_alive_due()) {  // it lives and its chunks are still out in its group: a keep-alive goes up
        master_action out;
        out.what = master_action::kind::up;
        out.message.what = request_message::kind::results;
        actions_.push_back(std::move(out));
        last_up_ = now;
    }
    return actions_;
}

const std::vector<master_action>& master_session::abort(const std::string& why) {
    actions_.clear();
    take_group(group_.abort(why));
    report_failure();
    return actions_;
}

std::string default_master_technique(const std::string& technique) {
    const technique_info& info = find_technique(technique);
    return info.family == "weighted" ? info.name : std::string("fss");
}

technique_options master_options(const technique_options& workers, const std::vector<int>& groups,
                                 const std::string& top, bool defaulted) {
    technique_options o = workers;
    o.weights.clear(), o.times.clear(), o.run_queue.clear();
    std::size_t j = 0;
    for (int size : groups) {
        double weight = 0.0, speed = 0.0, available = 0.0;
        for (int i = 0; i < size; ++i, ++j) {
            const double v = workers.weights.empty() ? 1.0 : workers.weights.at(j);
            weight += v;
            if (!workers.times.empty()) speed += 1.0 / workers.times.at(j);
            if (!workers.run_queue.empty()) available += v / workers.run_queue.at(j);
        }
        o.weights.push_back(weight);
        o.min_chunk = std::max<task_count>(o.min_chunk, size);
        if (!workers.times.empty()) o.times.push_back(1.0 / speed);
        if (!workers.run_queue.empty()) o.run_queue.push_back(weight / available);
    }
    if (defaulted && top == "fss" && !o.factor) o.factor = 4.0;
    return o;
}

}  // namespace pfarm
