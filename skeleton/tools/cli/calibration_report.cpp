// Renders a calibration_result and auto's choices for the tools (declarations and the formats in calibration_report.hpp).
#include "calibration_report.hpp"

#include <algorithm>
#include <iomanip>
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

nlohmann::json choices_json(const std::vector<technique_choice>& choices) {
    nlohmann::json out = nlohmann::json::array();
    for (const technique_choice& c : choices) {
        nlohmann::json candidates = nlohmann::json::object();
        for (const auto& [name, ratio] : c.candidates) candidates[name] = ratio;
        out.push_back({{"round", c.round}, {"remaining", c.remaining}, {"chosen", c.chosen}, {"predicted", c.predicted},
                       {"seconds", c.seconds}, {"why", c.why}, {"candidates", candidates}});
    }
    return out;
}

std::string choice_line(const technique_choice& c) {
    std::ostringstream out;
    out << std::setprecision(5) << c.chosen << " at " << c.remaining << " tasks left (" << c.why << "), predicted "
        << c.predicted << " of the best";
    auto others = c.candidates;
    std::erase_if(others, [&](const auto& o) { return o.first == c.chosen; });
    std::stable_sort(others.begin(), others.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (std::size_t i = 0; i < others.size() && i < 3; ++i)
        out << (i == 0 ? "; then " : ", ") << others[i].first << " " << std::setprecision(4) << others[i].second;
    out << std::setprecision(3) << "; chosen in " << c.seconds << " s";
    return out.str();
}

}  // namespace pfarm::tools
