// pfarm-run: the summary of a run (run_summary.hpp).
#include "run_summary.hpp"

#include <ostream>

namespace pfarm::tools::run {

namespace {

std::string describe(const task_result& r) {
    switch (r.what()) {
    case outcome::failed:
        return r.signal ? "killed by signal " + std::to_string(r.signal) : "exit " + std::to_string(r.exit_code);
    case outcome::timed_out: return "timed out";
    case outcome::not_started: return "not started";
    default: return to_string(r.what());
    }
}

}  // namespace

void print_summary(std::ostream& out, const tally& t, task_count commands, bool halted,
                   const std::vector<std::string>& texts, const std::string& joblog) {
    out << "pfarm-run: " << commands << (commands == 1 ? " command: " : " commands: ") << t.ok << " succeeded";
    if (t.restored_ok > 0) out << " (" << t.restored_ok << " of them skipped: done in the journal)";
    if (t.failed > 0) out << ", " << t.failed << " failed";
    if (t.timed_out > 0) out << ", " << t.timed_out << " timed out";
    if (t.not_started > 0) out << ", " << t.not_started << " could not start";
    if (t.killed > 0) out << ", " << t.killed << " killed by the halt";
    if (t.not_run > 0) out << ", " << t.not_run << " not run";
    if (halted) out << " (halted by --halt)";
    const task_count failed_restored = t.restored - t.restored_ok;
    if (failed_restored > 0)
        out << "; " << failed_restored << (failed_restored == 1 ? " failure comes" : " failures come")
            << " from the journal (--retry-failed runs " << (failed_restored == 1 ? "it" : "them") << " again)";
    out << "\n";
    for (const auto& [task, r] : t.failures) {
        std::string c = texts[static_cast<std::size_t>(task)];
        for (char& ch : c)
            if (ch == '\n') ch = ' ';
        if (c.size() > 80) c = c.substr(0, 77) + "...";
        out << "pfarm-run:   task " << task << " (" << describe(r) << ", rank " << r.rank << "): " << c << "\n";
    }
    const task_count bad = t.failed + t.timed_out + t.not_started;
    if (bad > static_cast<task_count>(t.failures.size()))
        out << "pfarm-run:   ... " << bad - static_cast<task_count>(t.failures.size()) << " more"
            << (joblog.empty() ? "" : " in the job log " + joblog) << "\n";
}

}  // namespace pfarm::tools::run
