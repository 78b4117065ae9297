#!/usr/bin/env bash
# The main job: the calcium-channel parameter sweep of seed 004 (apps/calcium/README.md) on local MPI ranks,
# small by default (49 experiments of 10^4 channels x 10^4 steps, about 20 s on 2 cores). Extra arguments go to
# pfarm-calcium (e.g. --technique gss, --preset light); PFARM_RANKS sets the number of ranks (default 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ranks=${PFARM_RANKS:-2}
exec mpiexec -n "$ranks" --oversubscribe build/release/bin/pfarm-calcium --output out/calcium "$@"
