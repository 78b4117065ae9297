// pfarm-run: --halt, --timeout and the exit status as GNU parallel defines them (run_policy.hpp).
#include "run_policy.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace pfarm::tools::run {

namespace {

/// A number > 0 (a percentage when it ends in '%'); nullopt-like -1 when `text` is not one.
double positive(const std::string& text, bool& percent) {
    percent = !text.empty() && text.back() == '%';
    const std::string number = percent ? text.substr(0, text.size() - 1) : text;
    if (number.empty()) return -1;
    char* end = nullptr;
    const double v = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || !std::isfinite(v) || v <= 0) return -1;
    return v;
}

}  // namespace

bool halt_policy::reached(task_count hits, task_count total) const {
    if (when == never || hits <= 0) return false;
    if (!percent) return static_cast<double>(hits) >= count;
    return total > 0 && 100.0 * static_cast<double>(hits) >= count * static_cast<double>(total);
}

halt_policy parse_halt(const std::string& text) {
    halt_policy h;
    if (text == "never" || text == "0") return h;
    if (text == "1" || text == "2") {
        h.when = text == "1" ? halt_policy::soon : halt_policy::now;
        h.count = 1;
        return h;
    }
    const std::size_t comma = text.find(',');
    const std::string when = text.substr(0, comma);
    if (when != "now" && when != "soon")
        throw invalid_argument("--halt", "is '" + text + "'; expected never, or now|soon,fail|success|done=N|N%");
    h.when = when == "now" ? halt_policy::now : halt_policy::soon;
    const std::string rest = comma == std::string::npos ? "" : text.substr(comma + 1);
    const std::size_t eq = rest.find('=');
    const std::string what = rest.substr(0, eq);
    if ((what != "fail" && what != "success" && what != "done") || eq == std::string::npos)
        throw invalid_argument("--halt", "is '" + text + "'; expected never, or now|soon,fail|success|done=N|N%");
    h.on_success = what == "success";
    h.on_done = what == "done";
    h.count = positive(rest.substr(eq + 1), h.percent);
    if (h.count <= 0 || (h.percent && h.count > 100) || (!h.percent && h.count != std::floor(h.count)))
        throw invalid_argument("--halt", "is '" + text + "'; expected a whole number > 0 or a percentage in (0, 100] after '='");
    return h;
}

timeout_spec parse_timeout(const std::string& text) {
    timeout_spec t;
    bool percent = false;
    const double v = positive(text, percent);
    if (v <= 0)
        throw invalid_argument("--timeout", "is '" + text + "'; expected a number of seconds > 0, or a percentage of "
                                            "the median run time such as 200% (leave it out for no timeout)");
    (percent ? t.percent : t.seconds) = v;
    return t;
}

double timeout_spec::limit(std::vector<double>& runtimes) const {
    if (seconds > 0) return seconds;
    if (percent <= 0 || runtimes.size() < 3) return 0;
    const std::size_t mid = runtimes.size() / 2;
    std::nth_element(runtimes.begin(), runtimes.begin() + static_cast<std::ptrdiff_t>(mid), runtimes.end());
    return std::max(runtimes[mid] * percent / 100.0, 0.001);
}

int gnu_exit_status(task_count failed, task_count total, bool halted, const halt_policy& halt, int halt_status) {
    if (halted && halt.on_success) return 0;
    if (halted && halt.percent && total > 0)
        return static_cast<int>(std::ceil(100.0 * static_cast<double>(failed) / static_cast<double>(total)));
    if (halted && !halt.on_done && halt.count == 1) return std::clamp(halt_status, 1, 255);
    return static_cast<int>(std::min<task_count>(failed, 101));
}

}  // namespace pfarm::tools::run
