#!/usr/bin/env bash
# The whole benchmark suite in one command (docs/benchmarks.md), at a size of a few minutes on 2 cores;
# --full for the full size. Builds the release preset first (scripts/setup.sh installs what is missing).
# Results go to out/bench/; docs/performance.md records the latest run and says which targets are met.
#   benchmarks/run_all.sh [--full] [--ranks N]   (N: ranks of the overhead benchmark and the real runs, default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
ranks=3
while (($#)); do
  case "$1" in
    --full) full=1 ;;
    --ranks) ranks=$2; shift ;;
    *) echo "run_all.sh: unknown argument '$1'; expected --full or --ranks N" >&2; exit 2 ;;
  esac
  shift
done
source scripts/setup.sh
out=out/bench
mkdir -p "$out"
bin=build/release  # the build tree; its programs are in bin/
launcher="mpiexec --oversubscribe"
echo "== machine"; { uname -srm; lscpu | grep -E "Model name|^CPU\(s\)"; } | tee "$out/machine.txt"

echo "== 1. decision cost per technique (pfarm-bench-chunks)"
min_time=$([ $full = 1 ] && echo 0.5 || echo 0.05)
$bin/bin/pfarm-bench-chunks --benchmark_min_time=$min_time --benchmark_out="$out/chunks.json" \
  --benchmark_out_format=json --targets > "$out/chunks.txt"
sed -n '/Scheduling decision cost/,$p' "$out/chunks.txt"

echo "== 2. farmer overhead against raw MPI (pfarm-bench-overhead, 2 and $ranks ranks)"
tasks=$([ $full = 1 ] && echo 200000 || echo 20000)
for n in 2 "$ranks"; do
  $launcher -n "$n" $bin/bin/pfarm-bench-overhead --tasks "$tasks" --repetitions 5 > "$out/overhead-$n.txt"
  tail -1 "$out/overhead-$n.txt" | python3 -c 'import json, sys
d = json.load(sys.stdin)
print("%d ranks: raw %.2f us, pfarm %.2f us, ratio %.2f (target 1.5 at 2 ranks), prefetch ratio %.2f"
      % (d["ranks"], d["raw_round_trip_us"], d["pfarm_round_trip_us"], d["ratio"], d["prefetch_ratio"]))'
done

echo "== 3. schedule quality (pfarm-sim over platforms x workloads x techniques)"
python3 benchmarks/quality/run_quality.py --sim $bin/bin/pfarm-sim $([ $full = 1 ] && echo --full) \
  --out "$out/quality" > "$out/quality.txt" 2>&1 || { cat "$out/quality.txt"; exit 1; }
tail -5 "$out/quality.txt"

echo "== 4. real runs beside the simulator ($ranks ranks, emulated slowdowns)"
slowdown=$(python3 -c "print(','.join(['1'] * (($ranks - 1) // 2) + ['3'] * ($ranks - 1 - ($ranks - 1) // 2)))")
python3 benchmarks/real/real_runs.py --bin $bin --ranks "$ranks" --slowdown "$slowdown" --launcher "$launcher" \
  --size $([ $full = 1 ] && echo large || echo small) --markdown "$out/real.md" --json "$out/real.json" | tail -18
if [ -d $bin/python/pfarm ]; then
  echo "== 5. the Python package beside mpi4py.futures (2 ranks; docs/python.md)"
  PYTHONPATH=$bin/python $launcher -n 2 /usr/bin/python3 benchmarks/python/bench_vs_mpi4py.py \
    $([ $full = 1 ] || echo "--repeat 1 --sweep-tasks 5000 --cs1-tasks 2000") --json "$out/python.json" | tee "$out/python.txt"
fi
echo "== results in $out/ (docs/performance.md records a run and the targets)"
