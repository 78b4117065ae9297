#!/usr/bin/env bash
# The main job. Until the calcium-channel app lands (apps issue), it simulates seed 004's worked example:
# four workers with calibration times 1, 2, 3, 4 and 68 tasks under the adaptive multi-round scheme.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
./build/release/skeleton/tools/pfarm-sim --technique multi --tasks 68 --task-times 1,2,3,4 "$@"
