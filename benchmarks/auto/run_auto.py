#!/usr/bin/env python3
"""How near `auto` comes to the best technique in hindsight (docs/techniques/auto.md "How well it chooses").

Two sets of cases, every one simulated by pfarm-sim:
  quality   the schedule-quality study's 30 cases (benchmarks/quality/run_quality.py: 6 platforms x 5 loop shapes,
            16 workers, 10,000 tasks), against every row of that study (its techniques with and without reclaim and
            prefetch, the weighted ones also given the true speeds);
  random    --random N cases (default 30) drawn from --seed (default 20261203, chosen before any result was seen and never
            changed): 4 to 32 workers with speeds drawn from 1 to 8, a per-request overhead log-uniform from 1e-4 to
            0.3 of the slowest task, 2,000 to 20,000 tasks, a shape of the five, and in half the cases three
            load changes; against every technique of the registry, with and without reclaim.
For each case: the makespan of auto, auto with reclaim, and auto with prefetch and reclaim, each over the best
technique of the same protocol in hindsight (and over the best row of all); then the share of cases within 3%, the
worst, and the geometric mean of makespan over the fluid bound, against the best fixed technique of the protocol. Prints a table and the summary; --csv FILE keeps every run.

    python3 benchmarks/auto/run_auto.py --sim build/release/bin/pfarm-sim [--random 30] [--jobs 2] [--csv F]
    python3 benchmarks/auto/run_auto.py --sim ... --reuse F --csv G   # auto's rows again, the fixed ones from F
"""

import argparse
import concurrent.futures
import csv
import math
import os
import random
import subprocess
import json
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "quality"))
import run_quality as q  # noqa: E402  the study's platforms, loop shapes and per-technique options

AUTO = q.AUTO  # auto alone, with reclaim, with prefetch and reclaim


def run(sim, case, technique):
    cmd = q.command(sim, case["platform"], case["workload"], technique, case["tasks"])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    r = json.loads(proc.stdout)
    seconds = sum(c["seconds"] for c in r.get("choices", []))
    return {"case": case["name"], "technique": technique, "ratio": r["ratio"], "choices": len(r.get("choices", [])),
            "chosen": " ".join(c["chosen"] for c in r.get("choices", [])), "choice_seconds": seconds,
            "makespan": r["makespan"]}


def quality_cases():
    q.SHAPE_CV["mandelbrot"] = q.mandelbrot_cv()
    p, tasks = q.SIZES["default"]["workers"], q.SIZES["default"]["tasks"]
    platforms = q.make_platforms(p, tasks)
    return [{"name": f"{pn}/{w}", "platform": pl, "workload": w, "tasks": tasks}
            for pn, pl in platforms.items() for w in q.WORKLOADS], q.fixed_technique_list()


def random_cases(n, seed):
    q.SHAPE_CV["mandelbrot"] = q.mandelbrot_cv()
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        p = rng.randint(4, 32)
        speeds = [rng.uniform(1.0, 8.0) for _ in range(p)]
        times = [1.0 / s for s in speeds]
        overhead = math.exp(rng.uniform(math.log(1e-4), math.log(0.3))) * max(times)
        tasks = rng.randint(2000, 20000)
        changes = []
        if rng.random() < 0.5:
            horizon = tasks / sum(speeds)
            for _ in range(3):
                changes.append({"worker": rng.randrange(p), "time": round(rng.uniform(0.05, 0.8) * horizon, 6),
                                "factor": round(rng.uniform(1.5, 6.0), 4)})
        platform = {"task_times": [round(t, 6) for t in times], "overhead": round(overhead, 8), "latency": 0.0,
                    "load_changes": changes}
        cases.append({"name": f"random-{i}", "platform": platform, "workload": rng.choice(q.WORKLOADS), "tasks": tasks})
    fixed = (q.SIMPLE + q.WEIGHTED + q.TWO_PHASE + q.CALIBRATED + q.LITERATURE
             + [t + "+reclaim" for t in q.RECLAIMING] + [t + "+prefetch+reclaim" for t in q.RECLAIMING])
    return cases, fixed


def evaluate(sim, cases, fixed, jobs, reused=None):
    """Every row of every case; with `reused` (title's rows of an earlier --csv), the fixed rows are taken from it and
    only auto's are run: a fixed technique's simulation is deterministic, so this holds while only `auto` changed."""
    reused = reused or {}
    kept = [reused[(c["name"], t)] for c in cases for t in fixed if (c["name"], t) in reused]
    work = [(c, t) for c in cases for t in fixed + AUTO if t in AUTO or (c["name"], t) not in reused]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return kept + list(pool.map(lambda ct: run(sim, *ct), work))


def read_rows(path, title):
    """The rows of set `title` in an earlier --csv, by (case, technique)."""
    with open(path, newline="") as f:
        return {(r["case"], r["technique"]): {"case": r["case"], "technique": r["technique"],
                                              "ratio": float(r["makespan_over_bound"]), "choices": int(r["choices"]),
                                              "chosen": r["chosen"], "choice_seconds": float(r["choice_seconds"]),
                                              "makespan": float(r.get("makespan") or "nan")}
                for r in csv.DictReader(f) if r["set"] == title}


protocol = q.protocol  # '' (none), '+reclaim' or '+prefetch+reclaim': the farm's protocol a row ran under


def summarise(title, cases, fixed, rows, out):
    """Per case, each auto row over the best row of the same protocol without oracle weights (the technique a user
    could have picked for that farm), and over the best row of all; then the summary against the targets."""
    by = {(r["case"], r["technique"]): r for r in rows}
    fair = {a: [t for t in fixed if protocol(t) == protocol(a) and not t.endswith("+weights")] for a in AUTO}
    print(f"\n## {title}: {len(cases)} cases\n")
    print("Each auto row over the best row of its own protocol (no oracle weights), and in brackets over the best row "
          "of all.\n")
    print(f"{'case':48s} {'best of all':24s} {'/bound':>7s} " + " ".join(f"{a:>24s}" for a in AUTO) + "  chosen (auto)")
    within = {a: 0 for a in AUTO}
    within_all = {a: 0 for a in AUTO}
    worst = {a: 1.0 for a in AUTO}
    for c in cases:
        ratio = lambda t: by[(c["name"], t)]["ratio"]  # noqa: E731
        best_t = min(fixed, key=ratio)
        cells = []
        for a in AUTO:
            own = ratio(a) / min(ratio(t) for t in fair[a])
            alls = ratio(a) / ratio(best_t)
            within[a] += own <= 1.03
            within_all[a] += alls <= 1.03
            worst[a] = max(worst[a], own)
            cells.append(f"{own:14.4f} ({alls:6.4f})")
        print(f"{c['name']:48s} {best_t:24s} {ratio(best_t):7.4f} " + " ".join(cells) + "  " + by[(c['name'], 'auto')]["chosen"])
    n = len(cases)
    geo = {t: math.exp(sum(math.log(by[(c["name"], t)]["ratio"]) for c in cases) / n) for t in fixed + AUTO}
    print()
    for a in AUTO:
        best_fixed = min(fair[a], key=lambda t: geo[t])
        print(f"{a:24s} within 3% of the best of its protocol in {within[a]}/{n} ({100.0 * within[a] / n:.0f}%; "
              f"of all rows {within_all[a]}/{n}), worst {worst[a]:.4f}; geometric mean over the bound {geo[a]:.4f}, "
              f"best fixed of its protocol {best_fixed} {geo[best_fixed]:.4f}")
    runs = [r for r in rows if r["technique"] in AUTO]
    secs = [r["choice_seconds"] for r in runs]
    share = sorted(r["choice_seconds"] / r["makespan"] for r in runs)
    print(f"choosing: {min(secs):.3f} to {max(secs):.3f} s per run (all choices of a run, on the simulator's host), "
          f"{100 * share[len(share) // 2]:.3f}% of the makespan in the median run, {100 * share[-1]:.3f}% at most; "
          f"under 1% in {sum(s < 0.01 for s in share)}/{len(share)} runs")
    if out:
        for r in rows:
            out.writerow([title, r["case"], r["technique"], r["ratio"], r["choices"], r["chosen"], r["choice_seconds"],
                          r["makespan"]])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", required=True, help="pfarm-sim")
    ap.add_argument("--random", type=int, default=30, help="random cases (0: none)")
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--no-quality", action="store_true", help="only the random cases")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--csv", help="write every run here")
    ap.add_argument("--reuse", metavar="CSV", help="take the fixed techniques' rows from an earlier --csv of the same "
                    "sets and simulator build, and run only auto's (for a change to auto alone)")
    args = ap.parse_args()
    out = None
    if args.csv:
        f = open(args.csv, "w", newline="")
        out = csv.writer(f)
        out.writerow(["set", "case", "technique", "makespan_over_bound", "choices", "chosen", "choice_seconds",
                      "makespan"])
    if not args.no_quality:
        cases, fixed = quality_cases()
        reused = read_rows(args.reuse, "quality") if args.reuse else None
        summarise("quality", cases, fixed, evaluate(args.sim, cases, fixed, args.jobs, reused), out)
    if args.random > 0:
        cases, fixed = random_cases(args.random, args.seed)
        reused = read_rows(args.reuse, "random") if args.reuse else None
        summarise("random", cases, fixed, evaluate(args.sim, cases, fixed, args.jobs, reused), out)


if __name__ == "__main__":
    main()
