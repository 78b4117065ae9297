// The calibration of a run (Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in
// heterogeneous systems": fitness F per worker, eq. 4; CV, eq. 7; installment factor k, eq. 8) as JSON and as one
// line of text, and `auto`'s choices (pfarm/prediction.hpp) alike: one rendering for pfarm-sim, pfarm-chunks and the
// apps' farm report.
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/prediction.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace pfarm::tools {

/// {"mode", "times", "fitness", "mean", "stddev", "cv", "k", "note"[, "fitted"]}, as computed at the calibration
/// barrier (multi refreshes F during the run; this is the F it started from). Entry i of `times` and `fitness`
/// belongs to worker i (the workers that calibrated); `stddev` and `cv` use the population sigma of eq. 7 (the
/// paper's worked example, section 3.2.2, prints the sample sigma; pfarm follows the equation, as
/// docs/techniques/README.md "Where pfarm differs from the printed tables" says); `k` is eq. 8's value from these
/// times, which a technique may override (`multi --k`: the report's top-level k is the one it used); `note` is
/// empty unless the calibration repaired a time or a statistical fit fell back; `fitted` only in the statistical modes.
nlohmann::json calibration_json(const calibration_result& calibration);

/// "times: F 0.48 0.24 0.16 0.12, mean 2.5, stddev 1.11803, CV 0.447214, k 1.90365" (6 significant digits), with
/// "; <note>" when there is one.
std::string calibration_line(const calibration_result& calibration);

/// [{"round", "remaining", "chosen", "predicted", "seconds", "why", "candidates": {name: worst ratio to the best}}].
nlohmann::json choices_json(const std::vector<technique_choice>& choices);

/// "af at 9984 tasks left (calibrated), predicted 1.0123 of the best; then fac2 1.02, awf-b 1.03; chosen in 0.012 s":
/// the three candidates nearest the best after the chosen one.
std::string choice_line(const technique_choice& choice);

}  // namespace pfarm::tools
