#!/usr/bin/env bash
# The measurements taken on a 16-core machine (dated records in docs/measurements/): overhead at 2-16 ranks, farm
# options on real tasks, and the real runs of calcium and Mandelbrot beside the simulator, dedicated and with
# emulated slowdowns. Run from the repository root with the portable Open MPI of ../shared/portable-mpi and a
# Release build in build-portable; results go to $OUT (default out/device).
set -u
OUT=${OUT:-out/device}
mkdir -p "$OUT"
B=${B:-build-portable}
L=${L:-orterun --bind-to core}
{ lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core\(s\)|Socket|NUMA node\(s\)"; command -v python3; } > "$OUT/machine.txt" 2>&1
for n in 2 4 8 16; do
  $L -np $n $B/bin/pfarm-bench-overhead --tasks 20000 --repetitions 5 > "$OUT/overhead-$n.txt" 2>&1
done
for n in 2 16; do
  for flags in "" "--prefetch" "--farmer-computes" "--prefetch --farmer-computes"; do
    for t in ss multi; do
      m=$($L -np $n $B/bin/pfarm-mandelbrot --width 1000 --height 1000 --verify none --technique $t \
          --json --quiet $flags | python3 -c 'import json,sys; t=sys.stdin.read(); d=json.loads(t[t.find("{"):]); print(d["makespan"], d["farmer_cpu_seconds"])')
      echo "ranks $n technique $t flags [$flags] makespan_s/farmer_cpu_s $m"
    done
  done
done > "$OUT/modes.txt" 2>&1
python3 benchmarks/real/real_runs.py --bin $B --ranks 16 --launcher "$L" --size large \
  --markdown "$OUT/real16.md" --json "$OUT/real16.json" > "$OUT/real16.log" 2>&1
python3 benchmarks/real/real_runs.py --bin $B --ranks 16 --slowdown 1,1,1,1,1,2,2,2,2,2,4,4,4,4,4 --launcher "$L" \
  --size large --markdown "$OUT/real16-hetero.md" --json "$OUT/real16-hetero.json" > "$OUT/real16-hetero.log" 2>&1
tail -3 "$OUT"/*.log
