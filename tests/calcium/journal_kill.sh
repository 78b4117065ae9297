#!/usr/bin/env bash
# Resume after a crash (docs/reliability.md): a pfarm-calcium sweep run by mpiexec is killed with SIGKILL (the whole
# job) once its journal holds some tasks; rerun with the same journal, its output folder must be byte-identical to
# an uninterrupted run's, and the rerun must compute exactly the tasks the journal lacked (counted from its
# report: computed + journaled = experiments, journaled > 0).
#   journal_kill.sh WORKDIR CALCIUM LAUNCHER... -- SWEEP_ARGS...
set -euo pipefail
work=$1 calcium=$2
shift 2
launcher=()
while [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
args=("$@")
rm -rf "$work" && mkdir -p "$work"

"${launcher[@]}" "$calcium" --output "$work/reference" "${args[@]}" >/dev/null

# The run to kill, in its own process group so that one kill reaches mpiexec and every rank.
setsid "${launcher[@]}" "$calcium" --output "$work/run" --journal "$work/journal" "${args[@]}" >/dev/null 2>&1 &
job=$!
for _ in $(seq 1 1200); do  # until the journal holds its first batch of records (the header is 32 bytes)
  size=$(stat -c %s "$work/journal" 2>/dev/null || echo 0)
  if [ "$size" -gt 32 ] || ! kill -0 "$job" 2>/dev/null; then break; fi
  sleep 0.05
done
if ! kill -0 "$job" 2>/dev/null; then
  echo "journal_kill: the run ended before it could be killed; make the sweep longer" >&2
  exit 1
fi
kill -KILL -- "-$job" 2>/dev/null || true
wait "$job" 2>/dev/null || true
killed_size=$(stat -c %s "$work/journal")
echo "journal_kill: killed with a journal of $killed_size bytes"

"${launcher[@]}" "$calcium" --output "$work/run" --journal "$work/journal" --json "${args[@]}" >"$work/resume.json"
diff -r "$work/reference" "$work/run"
leftovers=$(find "$work/run" -name '*.tmp' | wc -l)
[ "$leftovers" -eq 0 ] || { echo "journal_kill: $leftovers .tmp files left" >&2; exit 1; }
python3 - "$work/resume.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
computed, journaled, tasks = sum(r["tasks_per_rank"]), r["journaled"], r["tasks"]
print(f"journal_kill: resumed: {journaled} tasks restored from the journal, {computed} computed, {tasks} in all")
assert journaled > 0, "nothing was restored from the journal"
assert computed > 0, "the journal held every task when the job was killed: make the sweep longer"
assert computed + journaled == tasks, "a journaled task was computed again, or a task is missing"
PY
echo "journal_kill: outputs identical to an uninterrupted run"
