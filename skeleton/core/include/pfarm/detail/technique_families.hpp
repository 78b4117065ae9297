// pfarm internals: each technique family contributes its registry rows; registry.cpp concatenates them.
#pragma once

#include "pfarm/registry.hpp"

#include <vector>

namespace pfarm::detail {

std::vector<technique_info> simple_techniques();      // static ss css gss fss tss fiss tfss   (simple.cpp)
std::vector<technique_info> weighted_techniques();    // dgss dfss dtss dfiss dtfss            (weighted.cpp)
std::vector<technique_info> two_phase_techniques();   // n-* an-* hpls-*                       (two_phase.cpp)
std::vector<technique_info> calibrated_techniques();  // deal dealdyn-sm multi                 (calibrated.cpp)
std::vector<technique_info> literature_techniques();  // awf awf-b..e af fsc mfsc              (literature.cpp)
std::vector<technique_info> auto_techniques();        // auto                                  (auto.cpp)

/// Builds a plain (unweighted) gss/fss/tss for the second phase of the two-phase schemes.
std::unique_ptr<technique> make_plain(const std::string& name, const technique_options& options, int workers);

}  // namespace pfarm::detail
