// Renders a calibration_result for the tools (declarations and the format in calibration_report.hpp).
#include "calibration_report.hpp"

#include <sstream>

namespace pfarm::tools {

nlohmann::json calibration_json(const calibration_result& c) {
    nlohmann::json j{{"mode", to_string(c.mode)},  {"times", c.times},        {"fitness", c.fitness},
                     {"mean", c.stats.mean},       {"stddev", c.stats.stddev}, {"cv", c.stats.cv},
                     {"k", c.k},                   {"note", c.note}};
    if (!c.fitted.empty()) j["fitted"] = c.fitted;
    return j;
}

std::string calibration_line(const calibration_result& c) {
    std::ostringstream out;
    out.precision(6);
    out << to_string(c.mode) << ": F";
    for (double f : c.fitness) out << ' ' << f;
    out << ", mean " << c.stats.mean << ", stddev " << c.stats.stddev << ", CV " << c.stats.cv << ", k " << c.k;
    if (!c.note.empty()) out << "; " << c.note;
    return out.str();
}

}  // namespace pfarm::tools
