#!/usr/bin/env bash
# The main job: the calcium-channel parameter sweep (apps/calcium/README.md) on local MPI ranks, one rank per core,
# every core computing: rank 0 farms and computes too (--farmer-computes) when the ranks fit the cores, so no core
# sits waiting on the farmer. Small by default (49 experiments of 10^4 channels x 10^4 steps, about 20 s on 2 cores).
# Extra arguments go to pfarm-calcium (e.g. --technique gss, --preset light). PFARM_RANKS sets the number of ranks
# (default: the cores this process may use); with more ranks than cores, rank 0 only farms.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cores=$(nproc)
ranks=${PFARM_RANKS:-$cores}
computes=()
((ranks <= cores)) && computes=(--farmer-computes)
exec mpiexec -n "$ranks" --oversubscribe build/release/bin/pfarm-calcium --output out/calcium "${computes[@]}" "$@"
