// Command-line options of a farm, shared by every app (one spelling each), and the report's two renderings.
#pragma once

#include "options.hpp"

#include "pfarm/farm.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>

namespace pfarm::tools {

/// Adds --technique and its parameters (options.hpp) and the farm's own options: --farmer-computes,
/// --prefetch, --reclaim, --stragglers FACTOR, --on-task-error stop|retry[=N]|skip, --replicated-input, --farmer flat|hierarchical|decentralised, --masters K,
/// --trace FILE, --progress auto|plain|quiet, --quiet, --slowdown f0,f1,... (per rank), --load-change RANK:TIME:FACTOR (repeatable). The defaults are whatever `options` holds, except
/// progress, which becomes `auto` (a bar on a terminal, a line every 5 s otherwise; --quiet for none).
void add_farm_options(CLI::App& app, farm_options& options);

/// A human summary of a farm (rank 0): technique, makespan, per-rank tasks/chunks/busy, imbalance, k, and the
/// calibration (F per worker, CV, k) when the technique calibrated.
void print_report(std::ostream& out, const farm_report& report);
/// An app's exit status once its farm completed: 0, or 3 when a worker rank was lost (on_worker_loss continue: every
/// result is in, computed without it).
inline int completed_status(const farm_report& report) { return report.lost_ranks.empty() ? 0 : 3; }

/// The report as JSON (the trace excluded); "calibration" (calibration_report.hpp) carries "ranks" too, the rank
/// of each entry of its times and fitness.
nlohmann::json report_json(const farm_report& report);

}  // namespace pfarm::tools
