// pfarm-run: up to N commands at once on a rank, each with its retries in its slot (run_slots.hpp).
#include "run_slots.hpp"

#include "pfarm/error.hpp"

#include <cmath>
#include <utility>

namespace pfarm::tools::run {

job_slots::job_slots(int jobs, int runs, std::function<command_spec(task_count, int, int)> prepare,
                     std::function<bool()> halted, std::function<void(const slot_job&)> report)
    : runs_(std::max(runs, 1)), prepare_(std::move(prepare)), halted_(std::move(halted)), report_(std::move(report)),
      slots_(static_cast<std::size_t>(std::max(jobs, 1))) {}

void job_slots::start(task_count task, const task_result& record) {
    for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
        if (slots_[slot]) continue;
        slot_job j;
        j.task = task;
        j.slot = static_cast<int>(slot);
        j.record = record;
        slots_[slot] = std::move(j);
        launch(slot);
        return;
    }
    throw error("pfarm-run: no free slot for a command (" + std::to_string(slots_.size()) + " running)");
}

void job_slots::launch(std::size_t slot) {
    for (;;) {  // an attempt that cannot start has ended: it may be run again at once
        slot_job& j = *slots_[slot];
        ++j.attempt;
        command_status failed;
        if (runner_.start(slot, prepare_(j.task, j.slot, j.attempt), failed)) return;
        if (!settle(slot, std::move(failed))) return;
    }
}

bool job_slots::settle(std::size_t slot, command_status st) {
    slot_job& j = *slots_[slot];
    task_result& r = j.record;
    if (j.attempt == 1) r.start = st.start;
    r.end = st.end;
    r.attempts = j.attempt;
    r.exit_code = st.exit_code;
    r.signal = st.signal;
    r.status = static_cast<std::uint8_t>(st.what);
    j.status = std::move(st);
    if (!j.status.error.empty()) report_(j);
    const outcome o = j.status.what;
    if (o != outcome::ok && o != outcome::killed && j.attempt < runs_ && !halted_()) return true;
    ended_.push_back(std::move(j));
    slots_[slot].reset();
    return false;
}

void job_slots::on_lines(std::function<void(const slot_job&, const line_piece&)> lines, std::function<void()> tick,
                         double period) {
    runner_.on_lines(
        [this, lines = std::move(lines)](const line_piece& piece) {
            slot_job& j = *slots_[static_cast<std::size_t>(piece.id)];  // a command's id is its slot
            j.streamed[piece.stream - 1] += piece.text.size();
            lines(j, piece);
        },
        std::move(tick), period);
}

std::vector<slot_job> job_slots::wait_below(std::size_t below) {
    while (runner_.running() >= std::max<std::size_t>(below, 1))
        for (auto& [slot, st] : runner_.wait(INFINITY))
            if (settle(static_cast<std::size_t>(slot), std::move(st))) launch(static_cast<std::size_t>(slot));
    return std::exchange(ended_, {});
}

}  // namespace pfarm::tools::run
