#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test with ctest (release preset), then the
# sanitizer subset: the unit tests and the tests labelled sanitize-ci (tests/mpi, the APIs' bad-input tables) built
# and run under the sanitize preset (AddressSanitizer and UBSan; docs/reliability.md "The suite under sanitizers").
# Arguments go to the release run's ctest, and then only that run happens (a focused run: `scripts/test.sh -R gss`).
# PFARM_SANITIZE=0 skips the sanitizer subset.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ctest --preset release -j "$jobs" "$@"
if (($# == 0)) && [ "${PFARM_SANITIZE:-1}" != 0 ]; then
  echo "pfarm: the sanitizer subset (sanitize preset, labels unit and sanitize-ci)"
  cmake --preset sanitize >/dev/null
  cmake --build --preset sanitize --target pfarm_sanitize_ci -j "$jobs"
  ctest --preset sanitize -j "$jobs" -L '^(unit|sanitize-ci)$'
fi
