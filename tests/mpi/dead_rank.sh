#!/usr/bin/env bash
# A dead rank (docs/reliability.md "A dead rank"): a worker process killed mid-run (SIGKILL) ends the whole job
# under Open MPI 4.1; the job must exit non-zero with a message, not hang (ctest's timeout catches a hang), and the
# rerun with the same journal resumes: it restores what the journal holds and checks every output.
#   dead_rank.sh WORKDIR PROGRAM LAUNCHER...
set -uo pipefail
work=$1 program=$2
shift 2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$@" "$program" journal-die >die.out 2>&1
code=$?
if [ "$code" -eq 0 ]; then
  echo "dead_rank: the job with a killed rank exited 0" >&2
  cat die.out >&2
  exit 1
fi
echo "dead_rank: the job with a killed rank exited $code; its last lines:"
tail -n 5 die.out
"$@" "$program" journal-resume || { echo "dead_rank: the resumed run failed" >&2; exit 1; }
