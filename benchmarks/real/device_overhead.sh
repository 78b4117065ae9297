#!/usr/bin/env bash
# The flat farmer's overhead on a lent 16-core machine, in one short batch (docs/performance.md's 16-core
# figures): pfarm-bench-overhead with 2 ranks on two neighbouring cores and on two far-apart cores, several runs
# each (the ratio is bimodal with placement on the dev VM, so each placement is reported, not the kinder one), then
# 4, 8 and 16 ranks once each, and Mandelbrot 3000 x 3000 fsc --farmer-computes with and without --prefetch (how
# long the worker waits). Run from the repository root with the portable Open MPI of ../shared/portable-mpi and a
# Release build (B, default build-portable) holding pfarm-bench-overhead and pfarm-mandelbrot; everything lands in
# $OUT/overhead (default out/device) and is packed into $OUT/overhead.tar.gz (the device tool returns 8 files).
set -u
OUT=${OUT:-out/device}
B=${B:-build-portable}
L=${L:-orterun --bind-to core}
RUNS=${RUNS:-5}
D="$OUT/overhead"
mkdir -p "$D"
{ lscpu; nproc; uname -r; } > "$D/machine.txt" 2>&1
bench="$B/bin/pfarm-bench-overhead"
summary() {  # the headline numbers of one JSON line
  python3 -c 'import json,sys
d=json.loads(open(sys.argv[1]).read())
print("raw %.3f us  ratio %.3f  raw_timed %.3f  prefetch %.3f  rate %.3f (%.0f/s vs %.0f/s)" % (d["raw_round_trip_us"],
      d["ratio"], d["raw_timed_ratio"], d["prefetch_ratio"], d["request_rate_ratio"], d["request_rate_per_s"],
      d["raw_request_rate_per_s"]))' "$1"
}
pinned() {  # pinned CPU,CPU program args...: 2 ranks, rank r on the r-th CPU of the list (taskset, not --cpu-set:
            # with a list of all the CPUs, Open MPI 4.1 binds to none)
  orterun --bind-to none -np 2 bash -c 'exec taskset -c "$(echo "$1" | cut -d, -f$((OMPI_COMM_WORLD_RANK + 1)))" "${@:2}"' \
    pin "$@"
}
for i in $(seq "$RUNS"); do
  for where in near far; do
    if [ $where = near ]; then cpus=0,1; else cpus=0,$(($(nproc) - 1)); fi
    f="$D/ovh2-$where-$i"
    pinned "$cpus" "$bench" --repetitions 7 --output "$f.json" > "$f.txt" 2>&1
    echo "2 ranks, cores $cpus ($where), run $i: $(summary "$f.json")"
  done
done | tee "$D/summary.txt"
for n in 4 8 16; do
  f="$D/ovh$n"
  $L -np $n "$bench" --tasks 20000 --repetitions 5 --output "$f.json" > "$f.txt" 2>&1
  echo "$n ranks: $(summary "$f.json")"
done | tee -a "$D/summary.txt"
for i in 1 2 3; do
  for pf in "" --prefetch; do
    pinned 0,1 "$B/bin/pfarm-mandelbrot" --width 3000 --height 3000 --technique fsc \
      --overhead-h 0.01 --sigma 1 --farmer-computes $pf --quiet --json --verify none 2>&1 |
      python3 -c 'import json,sys; t=sys.stdin.read(); d=json.loads(t[t.find("{"):])
print("mandelbrot 3000 fsc --farmer-computes %-10s makespan %.3f s, worker busy %.3f s, idle %.3f s" % (sys.argv[1] or "plain",
      d["makespan"], d["busy_per_rank"][1], d["makespan"] - d["busy_per_rank"][1]))' "$pf"
  done
done | tee -a "$D/summary.txt"
tar -C "$OUT" -czf "$OUT/overhead.tar.gz" overhead
