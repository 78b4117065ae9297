// The farm's one progress line on standard error (a bar on a terminal, plain lines otherwise), fed by every mode
// (flat, hierarchical, decentralised, one rank) on one rank: a line at most once an interval, the first one after an
// interval (a rate over no time says nothing), and the final line exactly once.
#include "engine.hpp"

#include <unistd.h>

#include <cstdio>
#include <iomanip>
#include <sstream>

namespace pfarm::detail {

progress_reporter::progress_reporter(progress_mode mode, task_count tasks) : tasks_(tasks), start_(now()) {
    const bool terminal = isatty(STDERR_FILENO) != 0;
    enabled_ = mode != progress_mode::quiet && tasks > 0;
    bar_ = mode == progress_mode::automatic && terminal;
    interval_ = bar_ ? 0.2 : 5.0;
    last_ = start_;
}

void progress_reporter::show(task_count done) {
    const double t = now();
    if (done >= tasks_) {
        if (finished_) return;
        finished_ = true;
        done = tasks_;
    } else if (t - last_ < interval_) {
        return;
    }
    last_ = t;
    const double elapsed = t - start_, rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
    const double left = rate > 0 ? static_cast<double>(tasks_ - done) / rate : 0.0;
    const int percent = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(tasks_));
    std::ostringstream line;
    if (bar_) {
        const int width = 30, filled = percent * width / 100;
        line << "\rpfarm [" << std::string(static_cast<std::size_t>(filled), '#')
             << std::string(static_cast<std::size_t>(width - filled), ' ') << "] ";
    } else {
        line << "pfarm: ";
    }
    line << done << "/" << tasks_ << " tasks (" << percent << "%), " << std::fixed << std::setprecision(1) << rate
         << " tasks/s, " << left << " s left";
    if (!bar_ || done == tasks_) line << "\n";
    std::fputs(line.str().c_str(), stderr);
    std::fflush(stderr);
}

}  // namespace pfarm::detail
