#!/usr/bin/env bash
# The startup's bound (docs/reliability.md "A lost worker", limits): under Open MPI's recovery mode a rank killed
# before the farm leaves the others in the farm's setup; PFARM_STARTUP_TIMEOUT=1 ends each living one with status 4
# and its message, and a farm longer than the bound is not cut once its setup is over (every rank 0). A rank killed
# at the setup's end (end_setup) before it came there ends every living rank with status 4; one killed after it came
# leaves both others passing it (each says so, status 0): never one side alone. Each rank's
# status is read from a file (under recovery mode mpirun exits 0 whatever its ranks return).
#   startup_guard.sh WORKDIR PROGRAM LAUNCHER...
set -uo pipefail
work=$1 program=$2
shift 2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMPI_MCA_orte_enable_recovery=1 PFARM_STARTUP_TIMEOUT=1
wrap='"$0" "$@"; s=$?; echo $s >status.$OMPI_COMM_WORLD_RANK; exit $s'
failed=0
for scenario in killed ok unarrived arrived; do
  mkdir "$scenario" && cd "$scenario"
  start=$(date +%s)
  timeout 60 "$@" sh -c "$wrap" "$program" "$scenario" >out.txt 2>err.txt
  wall=$(( $(date +%s) - start ))
  case $scenario in
    killed|unarrived) want=(4 4 137) ;;
    arrived) want=(0 0 137) ;;
    *) want=(0 0 0) ;;
  esac
  ranks=(0 1 2)
  got=()
  for r in "${ranks[@]}"; do got+=("$(cat status.$r 2>/dev/null || echo none)"); done
  if [ "${got[*]}" != "${want[*]}" ]; then
    echo "startup_guard: $scenario: rank statuses ${got[*]}, expected ${want[*]} (wall ${wall} s)" >&2
    failed=1
  fi
  if { [ "$scenario" = killed ] || [ "$scenario" = unarrived ]; } &&
     [ "$(grep -c 'a rank was lost before the farm began' err.txt)" -ne 2 ]; then
    echo "startup_guard: $scenario: the message is not on each living rank's standard error:" >&2
    failed=1
  fi
  if [ "$scenario" = unarrived ] && grep -q passed out.txt; then
    echo "startup_guard: unarrived: a rank passed the setup's end: $(grep passed out.txt)" >&2
    failed=1
  fi
  if [ "$scenario" = arrived ] && [ "$(grep -c 'arrived: rank [01] passed' out.txt)" -ne 2 ]; then
    echo "startup_guard: arrived: ranks 0 and 1 did not both pass the setup's end: $(cat out.txt)" >&2
    failed=1
  fi
  if [ "$scenario" = ok ] && ! grep -q "ok: farm of" out.txt; then
    echo "startup_guard: ok: the farm did not complete" >&2
    failed=1
  fi
  [ "$failed" -ne 0 ] && { tail -n 20 err.txt >&2; }
  echo "startup_guard: $scenario: statuses ${got[*]}, wall ${wall} s"
  cd ..
done
exit $failed
