#!/usr/bin/env bash
# The calcium sweep's voltage grid run two ways (docs/run.md), and the two I-V curves side by side:
#  1. the built-in pfarm-calcium, which farms its experiments itself (one task per experiment);
#  2. pfarm-run, which farms one external command per grid point, `VOLTAGE x SEED`: here pfarm-calcium run for one
#     voltage and one seed, started by pfarm-run as a one-rank MPI program; it stands for any existing simulation
#     binary or script that takes its parameters on the command line.
# The two use other random numbers (experiment i of a sweep draws from (seed, i); a one-voltage run is experiment
# 0), so their currents agree within the noise of the channels, not to the bit; both follow the deterministic
# curve (the last column).
#   scripts/calcium_grid.sh        # installs and builds first (scripts/setup.sh); writes out/calcium-grid
#   BUILD=build/release OUT=/tmp/grid VOLTAGES="-40 0 40" MODEL="--channels 300 --steps 400 --peak-duration 0.002" \
#     RANKS=3 scripts/calcium_grid.sh                       # an existing build, a small grid (tests/run)
# Other settings: SEEDS (default "1 2", the repeats of each voltage), RANKS (default 2). Rerunning resumes: pfarm-run
# keeps a journal (OUT/run.journal) and skips the grid points already done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -z "${BUILD:-}" ]; then
  source scripts/setup.sh
  BUILD=build/release
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-out/calcium-grid}
ranks=${RANKS:-2}
read -r -a voltages <<<"${VOLTAGES:-$(seq -s ' ' -60 5 60)}"
read -r -a seeds <<<"${SEEDS:-1 2}"
read -r -a model <<<"${MODEL:-}"  # pfarm-calcium's defaults: 10^4 channels x 10^4 steps, a 60 ms pulse
calcium=$BUILD/bin/pfarm-calcium
run=$BUILD/bin/pfarm-run
mpiexec=(mpiexec -n "$ranks" --oversubscribe)
mkdir -p "$out"

# 1. Built in: the same voltages, as many repeats as seeds (experiment V + k repeats voltage k).
step=$(( ${#voltages[@]} > 1 ? voltages[1] - voltages[0] : 1 ))
start=$(date +%s%N)
"${mpiexec[@]}" "$calcium" "${model[@]}" --v-min "${voltages[0]}" --v-max "${voltages[-1]}" --voltage-step "$step" \
  --experiments $(( ${#voltages[@]} * ${#seeds[@]} )) --seed 1 --summary-only --quiet --output "$out/builtin" >/dev/null
builtin_ms=$(( ($(date +%s%N) - start) / 1000000 ))

# 2. pfarm-run: one command per (voltage, seed); {1} and {2} are the values of the two ::: groups.
start=$(date +%s%N)
set +e
"${mpiexec[@]}" "$run" --farmer-computes --journal "$out/run.journal" --joblog "$out/run.joblog" \
  --output "$out/run-logs" --progress quiet \
  "$calcium ${model[*]} --v-min {1} --v-max {1} --seed {2} --summary-only --quiet --output $out/run/v{1}_seed{2}" \
  ::: "${voltages[@]}" ::: "${seeds[@]}" 2>"$out/run.stderr"
status=$?
set -e
run_ms=$(( ($(date +%s%N) - start) / 1000000 ))
grep '^pfarm-run: ' "$out/run.stderr" || true
if [ "$status" -ne 0 ]; then
  echo "calcium_grid: pfarm-run exited with $status (its job log: $out/run.joblog)" >&2
  exit "$status"
fi

# The two curves: plateau current per voltage, mean over the repeats (built in: iv.dat; pfarm-run: its summaries).
for v in "${voltages[@]}"; do
  for s in "${seeds[@]}"; do tail -n 1 "$out/run/v${v}_seed${s}/summary.csv"; done
done | awk -F, '{ sum[$1 + 0] += $3; n[$1 + 0]++ } END { for (v in sum) printf "%s %.6g\n", v, sum[v] / n[v] }' \
  | sort -g >"$out/run-iv.dat"
printf 'calcium_grid: built-in pfarm-calcium %d.%01d s, pfarm-run (%d commands) %d.%01d s, %d ranks\n' \
  $((builtin_ms / 1000)) $((builtin_ms % 1000 / 100)) $(( ${#voltages[@]} * ${#seeds[@]} )) $((run_ms / 1000)) \
  $((run_ms % 1000 / 100)) "$ranks"
printf '%8s %14s %14s %14s\n' V_mV builtin_pA pfarm-run_pA expected_pA
grep -v '^#' "$out/builtin/iv.dat" | sort -g | join <(awk '{ print $1 + 0, $2, $6 }' /dev/stdin) "$out/run-iv.dat" \
  | awk '{ printf "%8s %14.6g %14.6g %14.6g\n", $1, $2, $4, $3 }' | tee "$out/compare.txt"
awk 'NR == 1 || $2 < b { b = $2; bv = $1 } NR == 1 || $3 < r { r = $3; rv = $1 } END {
  printf "calcium_grid: I-V peak at %s mV built in, at %s mV through pfarm-run\n", bv, rv }' "$out/compare.txt"
