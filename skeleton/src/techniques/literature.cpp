// Literature techniques beyond the papers: being written (awf, awf-b..e, af, fsc, mfsc).
#include "pfarm/detail/technique_families.hpp"

namespace pfarm::detail {
std::vector<technique_info> literature_techniques() { return {}; }
}  // namespace pfarm::detail
