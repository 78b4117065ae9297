#!/usr/bin/env python3
"""Schedule-quality study: every technique of the registry through pfarm-sim, against the papers' claims.

Runs every technique of pfarm's registry, and `auto` (pfarm chooses the technique, docs/techniques/auto.md), on a
fixed set of simulated platforms and workloads and writes

  <out>/quality.csv      platform,workload,technique,makespan_over_bound,percent_imbalance,cov,chunks
  <out>/quality.md       the same table as Markdown, per-platform summaries, and the findings against the papers
  <out>/img/*.png        plots (gnuplot)

Sizes:  default  16 workers, 10,000 tasks; writes docs/
        --full   16 workers, 100,000 tasks; writes docs/
        --tiny   4 workers, 400 tasks, uniform and random only: the ctest smoke test; needs --out and never
                 writes docs/

Everything is deterministic: the platforms (load changes included) are built from fixed seeds, and pfarm-sim
is a deterministic discrete-event simulation. Python standard library only.

Cost: about 3,800 pfarm-sim processes per size, each a few milliseconds of simulation (auto's a few tenths of a
second: its choices simulate the candidates), so the run time is mostly process start-up and auto. On the 2-core
development VM: default about 80 s, --tiny 16 s while the machine is shared.
"""

import argparse
import concurrent.futures
import csv
import json
import math
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DOCS = os.path.join(REPO, "docs")

HEADER = ["platform", "workload", "technique", "makespan_over_bound", "percent_imbalance", "cov", "chunks"]

SIZES = {
    "tiny": {"workers": 4, "tasks": 400},
    "default": {"workers": 16, "tasks": 10_000},
    "full": {"workers": 16, "tasks": 100_000},
}

# Per-request farmer service time (pfarm-sim --overhead), in units of the slowest worker's time per task (1).
# small: 0.1% of a slow task. large: a quarter of a slow task, which is one task of the fastest heterogeneous
# worker; a one-by-one work queue then needs the farmer 4x (homogeneous) to 10x (heterogeneous) faster than it is.
# Table 4 of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in heterogeneous systems"
# (2009), puts the work queue 23% behind single-round on one worker: overhead ~ 0.23 task times.
OVERHEADS = {"small-overhead": 0.001, "large-overhead": 0.25}
LATENCY = 0.0  # one-way message latency; the per-request overhead is the variable under study

WORKLOADS = ["uniform", "increasing", "decreasing", "random", "mandelbrot"]
TINY_WORKLOADS = ["uniform", "random"]  # --tiny: the whole pipeline (runs, CSV, Markdown, plots) on two shapes
RANDOM_SEED = 1  # pfarm-sim --seed of the random shape
LOAD_SEED = 2009  # the non-dedicated platform's load history (the year Gonzalez-Velez & Cole was published)
ORDER_SEED = 7  # the order of the heterogeneous speeds over the worker indices


# --------------------------------------------------------------------------------------------------------
# Platforms
# --------------------------------------------------------------------------------------------------------

def hetero_speeds(p):
    """Speeds 1 to 4, evenly spaced (p = 4: 1, 2, 3, 4 as in Gonzalez-Velez & Cole's worked example), in a fixed
    shuffled order: at t = 0 every worker asks at once and the farmer serves them by index, so sorted speeds would hand
    the first (largest) chunks of gss, fss, ... to the slowest (or to the fastest) workers."""
    speeds = [1.0] if p == 1 else [1.0 + 3.0 * j / (p - 1) for j in range(p)]
    random.Random(ORDER_SEED).shuffle(speeds)
    return speeds


def hetero_task_times(p):
    return [1.0 / s for s in hetero_speeds(p)]


def fluid_bound(task_times, changes, work):
    """simulator.cpp's lower bound: the time at which the workers, at their speeds under the load changes, have
    done `work` together."""
    speed = [1.0 / t for t in task_times]
    rate, t, done = sum(speed), 0.0, 0.0
    for c in sorted(changes, key=lambda c: c["time"]):  # stable, as the simulator's
        if done + rate * (c["time"] - t) >= work:
            break
        done += rate * (c["time"] - t)
        t = c["time"]
        s = 1.0 / (task_times[c["worker"]] * c["factor"])
        rate += s - speed[c["worker"]]
        speed[c["worker"]] = s
    return t + (work - done) / rate


def load_history(p, task_times, tasks):
    """Non-dedicated load like Gonzalez-Velez & Cole's Fig. 4: each worker's 1-minute load average changes ten
    times in the run.

    The run is cut into ten periods of a tenth of its lower bound, each boundary jittered by up to 3% of it; in
    each period a worker carries a background load L drawn from: light U(0, 1) (p = 0.55), medium U(1, 2.5)
    (p = 0.30), heavy U(6, 7.5) (p = 0.15; Fig. 4's w_2 goes from ~1 to 7.47). The worker's task time is
    multiplied by 1 + L (one CPU shared with L competing processes). Period 0 starts at t = 0, so the
    calibration already sees the initial load. The loads do not depend on the length of the run; the times are
    scaled to the loaded lower bound (a fixed point, found by iterating from the dedicated bound).
    """
    horizon = tasks / sum(1.0 / t for t in task_times)
    for _ in range(50):
        changes = scaled_loads(p, horizon)
        new = fluid_bound(task_times, changes, tasks)
        if abs(new - horizon) <= 1e-9 * new:
            break
        horizon = new
    return changes


def scaled_loads(p, horizon):
    rng = random.Random(LOAD_SEED)
    changes = []
    for w in range(p):
        for i in range(10):
            t = 0.0 if i == 0 else horizon * (i / 10.0 + rng.uniform(-0.03, 0.03))
            u = rng.random()
            if u < 0.55:
                load = rng.uniform(0.0, 1.0)
            elif u < 0.85:
                load = rng.uniform(1.0, 2.5)
            else:
                load = rng.uniform(6.0, 7.5)
            changes.append({"worker": w, "time": round(t, 6), "factor": round(1.0 + load, 4)})
    return changes


def make_platforms(p, tasks):
    """name -> {"task_times", "overhead", "latency", "load_changes"}: pfarm-sim's platform model."""
    homo = [1.0] * p
    hetero = hetero_task_times(p)
    loads = load_history(p, hetero, tasks)
    platforms = {}
    for suffix, overhead in OVERHEADS.items():
        platforms["homogeneous-" + suffix] = {"task_times": homo, "overhead": overhead, "latency": LATENCY,
                                              "load_changes": []}
        platforms["hetero-" + suffix] = {"task_times": hetero, "overhead": overhead, "latency": LATENCY,
                                         "load_changes": []}
        platforms["nondedicated-hetero-" + suffix] = {"task_times": hetero, "overhead": overhead,
                                                      "latency": LATENCY, "load_changes": loads}
    order = ["homogeneous-small-overhead", "homogeneous-large-overhead", "hetero-small-overhead",
             "hetero-large-overhead", "nondedicated-hetero-small-overhead", "nondedicated-hetero-large-overhead"]
    return {name: platforms[name] for name in order}


# --------------------------------------------------------------------------------------------------------
# Techniques
# --------------------------------------------------------------------------------------------------------

SIMPLE = ["static", "deal", "ss", "css", "gss", "fss", "tss", "fiss", "tfss"]
WEIGHTED = ["dgss", "dfss", "dtss", "dfiss", "dtfss"]
TWO_PHASE = ["n-gss", "n-fss", "n-tss", "an-gss", "an-fss", "an-tss", "hpls-gss", "hpls-fss", "hpls-tss"]
CALIBRATED = ["dealdyn-sm", "dealdyn-lr", "dealdyn-mv", "multi", "multi-univariate", "multi-multivariate"]
LITERATURE = ["awf", "awf-b", "awf-c", "awf-d", "awf-e", "af", "fsc", "mfsc"]
# Weighted and alpha-based schemes given the true speeds with --weights (no calibration): the papers' own
# setting (Yang, Cheng & Shih, "On development of an efficient parallel loop self-scheduling for grid computing
# environments", weight by CPU clock; Chronopoulos, Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for
# heterogeneous clusters", by known virtual powers). Named "<technique>+weights".
INFORMED = WEIGHTED + ["n-gss", "n-fss", "n-tss", "an-gss", "an-fss", "an-tss"]
# pfarm-chunks also lists "wf", an alias of dfss: not run twice.


# Every technique again with work take-back (`--reclaim`, docs/skeleton.md "Reclaim"): once every task is
# handed out, an idle worker takes unstarted tasks back from the worker expected to finish last. pfarm does
# this at run time (farm_options::reclaim), so these rows count for the target. Named "<technique>+reclaim".
RECLAIMING = SIMPLE + WEIGHTED + TWO_PHASE + CALIBRATED + LITERATURE
# And with prefetch as well (`--prefetch --reclaim`): a worker asks for its next chunk when it starts one, which
# hides the cost of a request; with reclaim, a worker that asks ahead and finds the pool empty may take tasks
# back at once (farmer.hpp). Named "<technique>+prefetch+reclaim". Prefetch without reclaim is not a row: on a
# heterogeneous platform a slow worker holds two chunks with nothing to take them back.


# `--technique auto` under each protocol of the rows above: pfarm simulates the candidates over what it measured and
# goes on with its choice (docs/techniques/auto.md). Its rows are not candidates for "the best technique" of a case
# (the findings judge the fixed techniques); "Where auto ranks" compares each with the fixed rows of its protocol.
AUTO = ["auto", "auto+reclaim", "auto+prefetch+reclaim"]


def fixed_technique_list():
    """Every row but auto's: the techniques of the registry, informed, with reclaim, with prefetch and reclaim."""
    return (SIMPLE + WEIGHTED + TWO_PHASE + CALIBRATED + LITERATURE + [t + "+weights" for t in INFORMED]
            + [t + "+reclaim" for t in RECLAIMING] + [t + "+prefetch+reclaim" for t in RECLAIMING])


def technique_list():
    """The rows of the study, in the CSV's order: the fixed techniques, then auto's."""
    return fixed_technique_list() + AUTO


def protocol(technique):
    """'' (none), '+reclaim' or '+prefetch+reclaim': the farm's protocol a row ran under (+weights aside)."""
    base = technique.split("+")[0]
    return technique[len(base):].replace("+weights", "")


# CV of a task's cost for each shape (mean 1): uniform 0; increasing/decreasing 2(i+0.5)/S: CV = 1/sqrt(3);
# random U[0.1, 1.9]: 1.8/sqrt(12) = 0.52; mandelbrot: measured once from the profile (mandelbrot_cv).
SHAPE_CV = {"uniform": 0.0, "increasing": 1.0 / math.sqrt(3.0), "decreasing": 1.0 / math.sqrt(3.0),
            "random": 1.8 / math.sqrt(12.0), "mandelbrot": None}


def mandelbrot_cv():
    """CV of pfarm-sim's Mandelbrot profile: the column escape counts of [-2, 1] x [-1.5, 1.5], 1024 x 256,
    maxiter 256 (simulator.cpp), recomputed here at a quarter of the resolution (close enough for fsc's sigma)."""
    cols, rows, maxiter = 256, 64, 256
    values = []
    for c in range(cols):
        x0 = -2.0 + (c + 0.5) * 3.0 / cols
        total = 0
        for r in range(rows // 2):
            y0 = (r + 0.5) * 3.0 / rows
            x = y = 0.0
            n = 0
            while n < maxiter and x * x + y * y <= 4.0:
                x, y = x * x - y * y + x0, 2.0 * x * y + y0
                n += 1
            total += n
        values.append(total)
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) / mean


def technique_args(technique, platform, workload, tasks):
    """pfarm-sim options for one run: the technique's name and the options it needs."""
    p = len(platform["task_times"])
    base = technique.split("+")[0]
    name = {"multi-univariate": "multi", "multi-multivariate": "multi"}.get(base, base)
    args = ["--technique", name]
    if base == "multi-univariate":
        args += ["--calibration", "univariate"]
    if base == "multi-multivariate":
        args += ["--calibration", "multivariate"]
    if technique.endswith("+weights"):
        speeds = [1.0 / t for t in platform["task_times"]]  # the dedicated speeds (not the loads)
        args += ["--weights", ",".join(f"{s:.6g}" for s in speeds)]
    if technique.endswith("+reclaim"):
        args += ["--reclaim"]
    if "+prefetch" in technique:
        args += ["--prefetch"]
    # The overhead h of fsc and awf-d/-e, in task-time units: a request's cost (service + round trip) over
    # the mean time per task of the platform (harmonic: total work / total speed per worker).
    mean_task = p / sum(1.0 / t for t in platform["task_times"])
    h = (platform["overhead"] + 2.0 * platform["latency"]) / mean_task
    if base == "css":
        args += ["--chunk", str(max(1, tasks // (10 * p)))]  # CSS(k), k = S/(10p): ten chunks per worker
    if base in ("fsc", "awf-d", "awf-e"):
        args += ["--overhead-h", f"{h:.6g}"]
    if base == "fsc":
        # sigma: the CV of a task's time over the workload and the workers (in units of the mean task time);
        # fsc needs sigma > 0, so a dedicated homogeneous uniform loop (sigma = 0) gets a floor of 0.05.
        cv_shape = SHAPE_CV[workload]
        speeds = [1.0 / t for t in platform["task_times"]]
        ms = sum(speeds) / p
        cv_speed = math.sqrt(sum((1.0 / s - 1.0 / ms) ** 2 for s in speeds) / p) * ms  # CV of t_w, roughly
        sigma = math.sqrt((1 + cv_shape ** 2) * (1 + cv_speed ** 2) - 1)
        args += ["--sigma", f"{max(sigma, 0.05):.6g}"]
    return args


# --------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------

def platform_args(platform):
    args = ["--task-times", ",".join(repr(t) for t in platform["task_times"]),
            "--overhead", repr(platform["overhead"]), "--latency", repr(platform["latency"])]
    for c in platform["load_changes"]:
        args += ["--load-change", f"{c['worker']}:{c['time']!r}:{c['factor']!r}"]
    return args


def command(sim, platform, workload, technique, tasks, extra=()):
    return ([sim, "--tasks", str(tasks), "--shape", workload, "--seed", str(RANDOM_SEED), "--json"]
            + platform_args(platform) + technique_args(technique, platform, workload, tasks) + list(extra))


def run_one(sim, pname, platform, workload, technique, tasks):
    cmd = command(sim, platform, workload, technique, tasks)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pfarm-sim failed ({pname}, {workload}, {technique}), exit {proc.returncode}: "
                           f"{proc.stderr.strip()}")
    r = json.loads(proc.stdout)
    return {
        "platform": pname, "workload": workload, "technique": technique,
        "makespan_over_bound": r["ratio"], "percent_imbalance": r["percent_imbalance"], "cov": r["cov"],
        "chunks": r["chunks"],
        # not in the CSV, used by the findings:
        "makespan": r["makespan"], "lower_bound": r["lower_bound"],
        "calibration_end": r.get("calibration_end", 0.0), "k": r.get("k"),
        "calibration_note": r.get("calibration_note", ""),
        "chosen": [c["chosen"] for c in r.get("choices", [])],  # auto's choices, in order
    }


def run_all(sim, platforms, techniques, tasks, jobs):
    work = [(pn, pl, wl, t) for pn, pl in platforms.items() for wl in WORKLOADS for t in techniques]
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_one, sim, pn, pl, wl, t, tasks) for pn, pl, wl, t in work]
        for f in futures:
            rows.append(f.result())
    return rows


def trace_run(sim, platform, workload, technique, tasks, path):
    cmd = command(sim, platform, workload, technique, tasks, ["--trace", path])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pfarm-sim --trace failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------------------

def fmt_row(r):
    return [r["platform"], r["workload"], r["technique"], f"{r['makespan_over_bound']:.6f}",
            f"{r['percent_imbalance']:.4f}", f"{r['cov']:.6f}", str(r["chunks"])]


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for r in rows:
            w.writerow(fmt_row(r))


def check_csv(path, expected_rows):
    """The smoke test's check: the header, one row per run, every number finite, ratios >= 1 (the bound is a
    lower bound), imbalance in [0, 100], chunks >= 1."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        if header != HEADER:
            raise SystemExit(f"{path}: header {header}, expected {HEADER}")
        n = 0
        for line in reader:
            n += 1
            if len(line) != len(HEADER):
                raise SystemExit(f"{path}: row {n} has {len(line)} fields: {line}")
            ratio, imbalance, cov, chunks = float(line[3]), float(line[4]), float(line[5]), int(line[6])
            if not all(math.isfinite(v) for v in (ratio, imbalance, cov)):
                raise SystemExit(f"{path}: row {n} has a non-finite value: {line}")
            if ratio < 1.0 - 1e-9 or not 0.0 <= imbalance <= 100.0 + 1e-9 or cov < 0.0 or chunks < 1:
                raise SystemExit(f"{path}: row {n} is out of range: {line}")
    if n != expected_rows:
        raise SystemExit(f"{path}: {n} rows, expected {expected_rows}")


def md_table(header, rows, align=None):
    align = align or ["---"] * len(header)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------------------------------------

class Results:
    def __init__(self, rows, platforms):
        self.rows = rows
        self.by = {(r["platform"], r["workload"], r["technique"]): r for r in rows}
        self.platforms = list(platforms)

    def get(self, p, w, t):
        """The row; a row of NaNs for a workload --tiny does not run (the prose then reads "nan")."""
        if (p, w, t) not in self.by and w not in WORKLOADS:
            nan = float("nan")
            return {"makespan_over_bound": nan, "percent_imbalance": nan, "cov": nan, "chunks": 0,
                    "makespan": nan, "lower_bound": nan, "calibration_end": nan, "calibration_note": ""}
        return self.by[(p, w, t)]

    def ratio(self, p, w, t):
        return self.get(p, w, t)["makespan_over_bound"]

    def techniques(self):
        seen = []
        for r in self.rows:
            if r["technique"] not in seen:
                seen.append(r["technique"])
        return seen

    def best(self, p, w, informed, reclaim=True, prefetch=True):
        """The best fixed technique of a case (auto's rows are measured against it, not among it)."""
        cands = [t for t in self.techniques() if t not in AUTO and (informed or not t.endswith("+weights"))
                 and (reclaim or not t.endswith("+reclaim")) and (prefetch or "+prefetch" not in t)]
        t = min(cands, key=lambda t: (self.ratio(p, w, t), self.get(p, w, t)["chunks"]))
        return t, self.ratio(p, w, t)


def r3(x):
    return f"{x:.3f}"


def hetero_platforms(res):
    return [p for p in res.platforms if "hetero" in p and "nondedicated" not in p]


def nondedicated_platforms(res):
    return [p for p in res.platforms if "nondedicated" in p]


def homogeneous_platforms(res):
    return [p for p in res.platforms if "hetero" not in p and "nondedicated" not in p]


def target_platforms(res):
    return [p for p in res.platforms if "hetero" in p or "nondedicated" in p]


def tss_check(tasks, p):
    """TSS with the floored decrement (pfarm) and the exact one, list-scheduled on p equal workers."""
    F = max(1, tasks // (2 * p))
    L = 1
    N = max(1, math.ceil(2 * tasks / (F + L)))
    exact = (F - L) / (N - 1) if N > 1 else 0.0
    out = {"F": F, "N": N, "D": math.floor(exact), "exact": exact}
    for name, d in (("floor", math.floor(exact)), ("exact", exact)):
        chunks, left, i = [], tasks, 0
        while left > 0:
            c = min(left, max(1, int(F - i * d + 0.5) if name == "exact" else F - i * d))
            chunks.append(c)
            left -= c
            i += 1
        finish = [0.0] * p
        for c in chunks:
            j = min(range(p), key=lambda k: (finish[k], k))
            finish[j] += c
        out["ratio_" + name] = max(finish) / (tasks / p)
        out["chunks_" + name] = len(chunks)
        out["last_" + name] = min(chunks[-p:])
        out["last_max_" + name] = max(chunks[-p:])
    return out


def by_workload(cases):
    """cases: [(platform, workload, bool)] -> 'uniform 2/2, increasing 0/2, ...'"""
    out = []
    for w in WORKLOADS:
        sel = [c for c in cases if c[1] == w]
        out.append(f"{w} {sum(1 for c in sel if c[2])}/{len(sel)}")
    return ", ".join(out)


def claim_single_round(res):
    """Gonzalez-Velez & Cole: dealdyn-sm (times-only single round) far ahead of deal (isometric single round),
    heterogeneous."""
    rows, cases, beyond = [], [], []
    for p in hetero_platforms(res) + nondedicated_platforms(res):
        for w in WORKLOADS:
            deal, sm = res.ratio(p, w, "deal"), res.ratio(p, w, "dealdyn-sm")
            lr, mv = res.ratio(p, w, "dealdyn-lr"), res.ratio(p, w, "dealdyn-mv")
            change = sm / deal - 1.0  # the makespan change of dealdyn-sm against deal
            rows.append([p, w, r3(deal), r3(sm), f"{100 * change:+.0f}%", r3(lr), r3(mv)])
            (beyond if "nondedicated" in p else cases).append((p, w, change <= -0.3, change))
    return md_table(["platform", "workload", "deal", "dealdyn-sm", "dealdyn-sm vs deal", "dealdyn-lr",
                     "dealdyn-mv"], rows), cases, beyond


def claim_multi_vs_ss(res):
    rows = []
    cases, cal, small = [], [], []
    for p in res.platforms:
        for w in WORKLOADS:
            ss, mu = res.get(p, w, "ss"), res.get(p, w, "multi")
            share = mu["calibration_end"] / mu["makespan"]
            rows.append([p, w, r3(ss["makespan_over_bound"]), r3(mu["makespan_over_bound"]),
                         f"{ss['makespan'] / mu['makespan']:.2f}", f"{100 * share:.1f}%", mu["chunks"]])
            if "large" in p:
                cases.append((p, w, mu["makespan"] < ss["makespan"], ss["makespan"] / mu["makespan"]))
                cal.append(share)
            else:
                small.append((p, w, mu["makespan"] <= ss["makespan"], ss["makespan"] / mu["makespan"]))
    return md_table(["platform", "workload", "ss (work queue)", "multi", "ss / multi makespan",
                     "multi calibration / makespan", "multi chunks"], rows), cases, cal, small


PAIRS = [("gss", "dgss"), ("fss", "dfss"), ("tss", "dtss"), ("fiss", "dfiss"), ("tfss", "dtfss")]


def claim_weighted_balance(res):
    rows = []
    informed, calibrated, cov_informed, nondedicated = [], [], [], []
    for p in hetero_platforms(res) + nondedicated_platforms(res):
        for simple, dist in PAIRS:
            cells = []
            for w in WORKLOADS:
                a = res.get(p, w, simple)
                b = res.get(p, w, dist)
                c = res.get(p, w, dist + "+weights")
                cells.append(f"{a['percent_imbalance']:.1f} / {b['percent_imbalance']:.1f} / "
                             f"{c['percent_imbalance']:.1f}")
                if "nondedicated" in p:
                    nondedicated.append((p, w, c["percent_imbalance"] < a["percent_imbalance"]))
                    continue
                informed.append((p, w, c["percent_imbalance"] < a["percent_imbalance"]))
                calibrated.append((p, w, b["percent_imbalance"] < a["percent_imbalance"]))
                cov_informed.append((p, w, c["cov"] < a["cov"]))
            rows.append([p, f"{simple} / {dist} / {dist}+weights"] + cells)
    return (md_table(["platform", "percent imbalance of"] + WORKLOADS, rows), informed, calibrated, cov_informed,
            nondedicated)


def claim_two_phase(res):
    het_rows, hom_rows = [], []
    cases = {"n-*+weights": [], "an-*+weights": [], "hpls-*": []}
    for p in hetero_platforms(res):
        for base in ("gss", "fss", "tss"):
            cells = []
            for w in WORKLOADS:
                plain = res.ratio(p, w, base)
                n = res.ratio(p, w, f"n-{base}+weights")
                an = res.ratio(p, w, f"an-{base}+weights")
                h = res.ratio(p, w, f"hpls-{base}")
                cells.append(f"{plain:.2f} / {n:.2f} / {h:.2f}")
                for key, v in (("n-*+weights", n), ("an-*+weights", an), ("hpls-*", h)):
                    cases[key].append((p, w, v < plain))
            het_rows.append([p, f"{base} / n-{base}+weights / hpls-{base}"] + cells)
    behind = []
    for p in homogeneous_platforms(res):
        for w in WORKLOADS:
            st = res.ratio(p, w, "static")
            cells = [r3(st)]
            for t in ("n-gss+weights", "n-fss+weights", "n-tss+weights", "hpls-gss", "hpls-fss", "hpls-tss"):
                v = res.ratio(p, w, t)
                cells.append(f"{v:.3f} ({100 * (v / st - 1):+.1f}%)")
                if w == "uniform":
                    behind.append((p, t, v / st - 1))
            hom_rows.append([p, w] + cells)
    return (md_table(["platform", "makespan / bound of"] + WORKLOADS, het_rows),
            md_table(["platform", "workload", "static", "n-gss+weights", "n-fss+weights", "n-tss+weights",
                      "hpls-gss", "hpls-fss", "hpls-tss"], hom_rows), cases, behind)


def auto_ranking(res):
    """Each auto row against the fixed rows of its protocol without oracle weights (what a user could have named for
    that farm), over every case: [(auto row, its geometric mean of makespan over the bound, its rank among those
    rows and itself, how many they are, the best of them, its geometric mean, cases within 3% of the case's best
    of the protocol, the worst ratio to it, the case of the worst, the most frequent first choice and its count)]."""
    cases = [(p, w) for p in res.platforms for w in WORKLOADS]
    geo = lambda t: math.exp(sum(math.log(res.ratio(p, w, t)) for p, w in cases) / len(cases))  # noqa: E731
    out = []
    for a in AUTO:
        fair = [t for t in res.techniques() if t not in AUTO and protocol(t) == protocol(a)
                and not t.endswith("+weights")]
        geos = {t: geo(t) for t in fair}
        mine = geo(a)
        best = min(fair, key=lambda t: (geos[t], fair.index(t)))
        own = [(res.ratio(p, w, a) / min(res.ratio(p, w, t) for t in fair), p, w) for p, w in cases]
        worst = max(own)
        firsts = [(res.get(p, w, a).get("chosen") or [None])[0] for p, w in cases]
        firsts = [f for f in firsts if f]
        common = max(sorted(set(firsts)), key=firsts.count) if firsts else "-"
        out.append((a, mine, 1 + sum(1 for t in fair if geos[t] < mine), len(fair) + 1, best, geos[best],
                    sum(1 for o in own if o[0] <= 1.03), worst[0], f"{worst[1]}/{worst[2]}", common,
                    firsts.count(common), len(cases)))
    return out


def target_candidates(res, p, w):
    """The three best techniques (no oracle weights) of a case, multi and fsc: re-run at the other size."""
    cands = sorted((t for t in res.techniques() if not t.endswith("+weights") and t not in AUTO),
                   key=lambda t: (res.ratio(p, w, t), res.get(p, w, t)["chunks"]))[:3]
    return cands + [t for t in ("multi", "fsc") if t not in cands]


def target_table(res, other, other_tasks):
    """other: {(platform, workload, technique): row} of the candidates re-run with other_tasks tasks."""
    rows = []
    misses = []
    for p in target_platforms(res):
        for w in WORKLOADS:
            t, v = res.best(p, w, informed=False)
            tp, vp = res.best(p, w, informed=False, reclaim=False)
            ti, vi = res.best(p, w, informed=True)
            mu = res.get(p, w, "multi")
            o = [(other[(p, w, c)]["makespan_over_bound"], i, c) for i, c in enumerate(target_candidates(res, p, w))]
            ov, _, ot = min(o)
            rows.append([p, w, t, r3(v), "yes" if v <= 1.05 else f"**no** (+{100 * (v - 1):.1f}%)",
                         tp if tp != t else "same", r3(vp),
                         ti if ti != t else "same", r3(vi), r3(mu["makespan_over_bound"]),
                         f"{100 * mu['calibration_end'] / mu['makespan']:.1f}%", f"{ot} {ov:.3f}"])
            if v > 1.05:
                misses.append((p, w, t, v, ot, ov))
    return md_table(["platform", "workload", "best technique", "makespan / bound", "within 5%",
                     "best without reclaim", "its ratio", "best with --weights", "its ratio", "multi", "multi calibration share",
                     f"best of these at {other_tasks:,} tasks"], rows), misses


# --------------------------------------------------------------------------------------------------------
# Plots (gnuplot; the scripts beside this file)
# --------------------------------------------------------------------------------------------------------

def gnuplot(gp, script, variables):
    args = [gp]
    for k, v in variables.items():
        args += ["-e", f"{k}='{v}'"]
    args.append(os.path.join(HERE, script))
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"gnuplot {script} failed: {proc.stderr.strip()}")


def plot_all(res, platforms, sim, tasks, gp, img, tmp):
    os.makedirs(img, exist_ok=True)
    techs = res.techniques()
    # 1. Overview: makespan / bound of every technique, one panel per platform, one point type per workload.
    for i, p in enumerate(res.platforms):
        with open(os.path.join(tmp, f"overview{i}.dat"), "w") as f:
            for j, t in enumerate(techs):
                f.write(f"{j} {t} " + " ".join(f"{res.ratio(p, w, t):.6g}" for w in WORKLOADS) + "\n")
    gnuplot(gp, "overview.gp", {"dir": tmp, "out": os.path.join(img, "quality_overview.png"),
                                "titles": " ".join(res.platforms), "n": str(len(techs)),
                                "workloads": " ".join(WORKLOADS),
                                "ymax": f"{max(12.0, 1.1 * max(r['makespan_over_bound'] for r in res.rows)):.3g}"})
    # 2. The claims.
    het = hetero_platforms(res)
    small = [p for p in het if "small" in p][0]
    with open(os.path.join(tmp, "single.dat"), "w") as f:  # Gonzalez-Velez & Cole single round, hetero small overhead
        for w in WORKLOADS:
            f.write(f"{w} " + " ".join(f"{res.ratio(small, w, t):.6g}" for t in
                                        ("deal", "dealdyn-sm", "dealdyn-lr", "dealdyn-mv")) + "\n")
    with open(os.path.join(tmp, "multi.dat"), "w") as f:  # Gonzalez-Velez & Cole multi vs work queue, both overheads
        for p in res.platforms:
            label = p.replace("-overhead", "").replace("nondedicated", "nonded.").replace("homogeneous", "homog.")
            f.write(f"{label} " + " ".join(f"{res.ratio(p, 'uniform', t):.6g}" for t in ("ss", "multi")) + "\n")
    with open(os.path.join(tmp, "balance.dat"), "w") as f:  # Chronopoulos et al., mean imbalance over the workloads
        for s, d in PAIRS:
            vals = []
            for t in (s, d, d + "+weights"):
                vals.append(sum(res.get(small, w, t)["percent_imbalance"] for w in WORKLOADS) / len(WORKLOADS))
            f.write(f"{s}/{d} " + " ".join(f"{v:.6g}" for v in vals) + "\n")
    homo_large = [p for p in res.platforms if p.startswith("homogeneous") and "large" in p][0]
    with open(os.path.join(tmp, "twophase.dat"), "w") as f:  # Yang, Cheng & Shih and HPLS, uniform workload
        for base in ("gss", "fss", "tss"):
            for p, tag in ((small, "het"), (homo_large, "hom")):
                f.write(f"{base}:{tag} " + " ".join(f"{res.ratio(p, 'uniform', t):.6g}" for t in
                                                    ("static", base, f"n-{base}+weights", f"hpls-{base}")) + "\n")
    gnuplot(gp, "claims.gp", {"dir": tmp, "out": os.path.join(img, "quality_claims.png"), "het": small,
                              "hom": homo_large})
    # 3. Gonzalez-Velez & Cole Fig. 4: multi's installments under the non-dedicated load.
    nd = [p for p in res.platforms if "nondedicated" in p and "small" in p][0]
    pl = platforms[nd]
    trace = os.path.join(tmp, "trace.csv")
    trace_run(sim, pl, "uniform", "multi", tasks, trace)
    chunks = {}
    with open(trace) as f:  # the one trace schema (docs/traces.md): a '#' summary line, then a header
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            if row["calibration"] == "1":
                continue
            chunks.setdefault(int(row["rank"]), []).append((float(row["started"]), int(row["count"])))
    # The four workers with the widest load swings (a heavy period among light ones, like Fig. 4's w_2).
    swing = {}
    for c in pl["load_changes"]:
        lo, hi = swing.get(c["worker"], (1e9, 0))
        swing[c["worker"]] = (min(lo, c["factor"]), max(hi, c["factor"]))
    workers = sorted(swing, key=lambda w: (-(swing[w][1] - swing[w][0]), w))[:4]
    end = max(s for w in chunks for s, _ in chunks[w]) * 1.02
    speeds = hetero_speeds(len(pl["task_times"]))
    for k, w in enumerate(sorted(workers)):
        with open(os.path.join(tmp, f"fig4_chunks{k}.dat"), "w") as f:
            for s, n in chunks.get(w, []):
                f.write(f"{s:.6g} {n}\n")
        with open(os.path.join(tmp, f"fig4_load{k}.dat"), "w") as f:
            ch = sorted((c["time"], c["factor"]) for c in pl["load_changes"] if c["worker"] == w)
            for t, fac in ch:
                f.write(f"{t:.6g} {fac - 1:.6g}\n")
            f.write(f"{end:.6g} {ch[-1][1] - 1:.6g}\n")
    gnuplot(gp, "fig4.gp", {"dir": tmp, "out": os.path.join(img, "quality_fig4.png"),
                            "labels": " ".join(f"w{w},speed={speeds[w]:.1f}" for w in sorted(workers)),
                            "xmax": f"{end:.6g}"})
    return sorted(workers)


def describe_cases(cases, fmt):
    return "; ".join(fmt(c) for c in cases) if cases else "none"


def markdown(res, platforms, mode, p, tasks, elapsed, fig4_workers, other, other_tasks):
    L = []
    add = L.append
    nruns = len(res.rows) + len(other)
    cmd = {"default": "python3 benchmarks/quality/run_quality.py",
           "full": "python3 benchmarks/quality/run_quality.py --full",
           "tiny": "python3 benchmarks/quality/run_quality.py --tiny --out DIR"}[mode]
    # elapsed: the simulations only (the plots take a few seconds more)
    add("# Schedule quality (simulator)\n")
    add(f"Generated by `{cmd}` ({mode} size: {p} workers, {tasks:,} tasks; {nruns} simulations in "
        f"{elapsed:.0f} s). Do not edit by hand: rerun the script. The table is `docs/quality.csv` "
        "(`platform,workload,technique,makespan_over_bound,percent_imbalance,cov,chunks`), repeated in full at the "
        "end of this page; the plots are in `docs/img/quality_*.png`.\n")
    add("```console\n$ python3 benchmarks/quality/run_quality.py            # default: 16 workers, 10,000 tasks\n"
        "$ python3 benchmarks/quality/run_quality.py --full     # 16 workers, 100,000 tasks\n"
        "$ python3 benchmarks/quality/run_quality.py --print-command hetero-small-overhead uniform multi\n```\n")
    add("`--sim PATH` names the `pfarm-sim` to use (default: `$PFARM_SIM`, else `build/release`, `build-quality`, "
        "`build` of this checkout); `--out DIR` writes elsewhere; `--print-command` prints the exact `pfarm-sim` "
        "command line of one row. ctest runs `--tiny` (4 workers, 400 tasks, two workloads) into the build "
        "folder as `quality.smoke`.\n")

    # ---- setup
    add("## Setup\n")
    add("Every run is one `pfarm-sim --json` (the discrete-event model at the top of `skeleton/sim/src/simulator.cpp`): "
        "one farmer serving requests one at a time, each answer costing `--overhead` of farmer time; results "
        "piggyback on requests; message latency 0. Time unit: one task of mean cost on a worker of speed 1. "
        "The metrics: makespan (calibration included) over the fluid lower bound "
        "(total work / sum of speeds, integrated over the load changes; overhead is *not* in the bound), percent "
        "imbalance `(max - mean)/max * p/(p-1) * 100` and COV of the workers' finishing times, chunks "
        "(calibration tasks included).\n")
    speeds = hetero_speeds(p)
    nd = [n for n in res.platforms if "nondedicated" in n][0]
    loads = platforms[nd]["load_changes"]
    heavy = sum(1 for c in loads if c["factor"] > 5)
    add(md_table(["platform", "workers (speed = 1 / time per task)", "per-request overhead", "load"], [
        [n, "all speed 1" if n.startswith("homogeneous") else "speeds 1 to 4 (below)",
         f"{platforms[n]['overhead']:g}",
         "none (dedicated)" if not platforms[n]["load_changes"] else
         f"{len(platforms[n]['load_changes'])} load changes (below)"] for n in res.platforms]) + "\n")
    add(f"- **Overheads.** small = {OVERHEADS['small-overhead']:g} (0.1% of a speed-1 task); large = "
        f"{OVERHEADS['large-overhead']:g}, one task of the fastest worker: a one-by-one work queue then asks the "
        f"farmer for {p} (homogeneous) or {sum(speeds):g} (heterogeneous) answers per time unit where it can give "
        f"{1 / OVERHEADS['large-overhead']:g}. Table 4 of González-Vélez & Cole, *Adaptive statistical scheduling of "
        "divisible workloads in heterogeneous systems* (2009; work queue 23% behind single round on one worker), "
        "is this regime.\n"
        "- **Speeds** are spread evenly from 1 to 4 and dealt to the worker indices in a fixed shuffled order "
        "(workers 0, 1, ...: " + ", ".join(f"{s:.1f}" for s in speeds) + "): "
        "all workers ask at t = 0 and the farmer serves ties by index, so sorted speeds would give the first, "
        "largest chunks of gss/fss/tss... to the slowest (or fastest) workers and bias the simple schemes.\n"
        f"- **Non-dedicated** (González-Vélez & Cole 2009, Fig. 4: 1-minute load averages of 0.94 ... 7.47 on one "
        "worker during one "
        "run): the heterogeneous workers, each carrying a background load L that changes ten times during the "
        "run (every tenth of the platform's lower bound, jittered by up to 3%; the first at t = 0, so calibration "
        "sees it), drawn light U(0, 1) with probability 0.55, medium U(1, 2.5) 0.30, heavy U(6, 7.5) 0.15; a "
        f"task then takes 1 + L times as long (`--load-change W:T:1+L`). Here {heavy} of the {len(loads)} "
        "periods are heavy. `dealdyn-lr/-mv` and `multi --calibration ...` read the simulated monitors "
        "(availability 1/(1+L), run queue 1+L, benchmark = the worker's speed, latency 0).\n"
        "- **Workloads** (`--shape`, every one of mean cost 1): the uniform, increasing, decreasing and "
        f"random (U[0.1, 1.9], `--seed {RANDOM_SEED}`) loops of Yang, Cheng & Shih, *On development of an "
        "efficient parallel loop self-scheduling for grid computing environments* (2007, Fig. 1), and the "
        "Mandelbrot column profile.\n"
        "- **Techniques**: every technique of `pfarm-chunks --help` (`wf` is `dfss`, not run twice), with their "
        "defaults (alpha = 80 for the two-phase schemes, x = 2 for factoring) and: `css --chunk S/(10p)`; "
        "`fsc` and `awf-d/-e` `--overhead-h` = overhead / mean time per task; `fsc --sigma` = the CV of a "
        "task's time over the workload and the workers (0.05 where that is 0: homogeneous uniform); "
        "`multi-univariate`/`multi-multivariate` are `multi --calibration univariate|multivariate`. "
        "Weighted, `n-*` and `an-*` schemes without `--weights` calibrate (one task per worker). The rows "
        "`<technique>+weights` are the same schemes **informed**: `--weights` = the true dedicated speeds, no "
        "calibration. That is the papers' setting (Yang, Cheng & Shih 2007 weigh by CPU clock; Chronopoulos, "
        "Penmatsa, Yu & Yu, *Scalable loop self-scheduling schemes for heterogeneous clusters* (2005), by known "
        "virtual powers) but not something pfarm knows at run time; the target below is judged without them. "
        "The rows `auto`, `auto+reclaim` and `auto+prefetch+reclaim` are `--technique auto` under the three "
        "protocols (\"Where `auto` ranks\" below).\n")

    # ---- target
    add("## Findings\n")
    add("Each claim is checked on the cases it is about; \"ahead\" means a smaller makespan, \"more balanced\" a "
        "smaller percent imbalance. The verdicts below are computed from the table by `run_quality.py`; the "
        "explanations were checked against the traces of the runs they cite.\n")
    ttable, misses = target_table(res, other, other_tasks)
    ncases = len(target_platforms(res)) * len(WORKLOADS)
    add("### Target: pfarm's best technique within 5% of the lower bound (heterogeneous and non-dedicated)\n")
    add("Best technique without oracle weights (calibration included), the best one including the informed "
        "`+weights` rows, `multi` (SCH_MULTI) with the share of its makespan spent before the calibration "
        f"barrier, and, to show what the size does, the three best techniques, multi and fsc run again with "
        f"{other_tasks:,} tasks instead of {tasks:,} (the best of those).\n")
    add(ttable + "\n")
    if not misses:
        add(f"**Met on all {ncases} cases.**\n")
    else:
        add(f"**Met on {ncases - len(misses)} of {ncases} cases, missed on {len(misses)}**: " +
            describe_cases(misses, lambda m: f"{m[0]} / {m[1]} (best {m[2]}, {m[3]:.3f}, i.e. "
                                             f"{100 * (m[3] - 1):.1f}% above the bound; at {other_tasks:,} tasks "
                                             f"{m[4]} {m[5]:.3f})") + ".\n")
    large = OVERHEADS["large-overhead"]
    het = [n for n in hetero_platforms(res) if "large" in n][0]
    if other_tasks > tasks:
        fixed = [m for m in misses if m[5] <= 1.05]
        if len(misses) == 1:
            size_note = "the miss comes within 5% there" if fixed else "the miss stays above 5% there"
        else:
            size_note = (f"{len(fixed)} of the {len(misses)} misses come within 5% there" if misses else
                         "every case stays within 5%")
    else:
        worse = [(p_, w_) for p_ in target_platforms(res) for w_ in WORKLOADS
                 if min(other[(p_, w_, c)]["makespan_over_bound"] for c in target_candidates(res, p_, w_)) > 1.05]
        size_note = f"{len(worse)} of the {ncases} cases miss 5% there"
    cal = res.get(het, "uniform", "multi")
    add(f"*Why the large-overhead cases are the hard ones.* The bound leaves the farmer out, and the farmer "
        f"serves one request at a time at {large:g} each. Calibration alone costs every worker three answers "
        f"(its task, the `wait`, the answer at the barrier): multi's barrier passes at "
        f"{cal['calibration_end']:.1f} on {het}/uniform and the last worker gets its first installment "
        f"{p * large:.0f} time units later, against a bound of {cal['lower_bound']:.0f}. Then every technique "
        "that ends in single tasks (eq. 9's `max(1, ...)` in multi; gss, fss, af, awf) queues the workers' last "
        "requests at the farmer. These costs are fixed, or grow like the number of chunks (log S), while the "
        f"bound grows like S, so they weigh {'less' if other_tasks > tasks else 'more'} with {other_tasks:,} tasks "
        f"(last column: {size_note}). The non-dedicated "
        "platform adds load spikes (1 + L up to 8.5) that land on workers holding a chunk; without reclaim no "
        "technique takes work back, so the chunk in flight sets the finish, and the smaller the chunks must be, "
        "the more requests the farmer serves. The Mandelbrot loop is the hardest: its first 30% of columns cost about a "
        "tenth of the mean and the stretch from 45% to 78% of the loop up to 3.3 times the mean, so a chunk "
        "sized in tasks from the columns before it holds far more work than expected; that stretch is handed "
        "out late in the run, and a load spike on a worker holding such a chunk makes it the last to finish. "
        "(Traced with `--full` on nondedicated-hetero-large-overhead/mandelbrot: the last chunk of fsc, 187 "
        "tasks from task 74,426, and that of multi, 295 tasks from task 73,269, both go to worker 6 (speed 1.8) "
        "shortly before its load rises to 7.4, and take 1,408 and 1,635 time units against a bound of "
        "4,660.)\n")

    plain_met = sum(1 for p_ in target_platforms(res) for w_ in WORKLOADS
                    if res.best(p_, w_, informed=False, reclaim=False)[1] <= 1.05)
    rec_rows = [(p_, w_, res.ratio(p_, w_, t_), res.ratio(p_, w_, t_ + "+reclaim"))
                for p_ in target_platforms(res) for w_ in WORKLOADS for t_ in RECLAIMING]
    helped = sum(1 for r_ in rec_rows if r_[3] < r_[2])
    no_prefetch_met = sum(1 for p_ in target_platforms(res) for w_ in WORKLOADS
                          if res.best(p_, w_, informed=False, prefetch=False)[1] <= 1.05)
    pf_rows = [(res.ratio(p_, w_, t_ + "+reclaim"), res.ratio(p_, w_, t_ + "+prefetch+reclaim"))
               for p_ in target_platforms(res) for w_ in WORKLOADS for t_ in RECLAIMING]
    pf_helped = sum(1 for a_, b_ in pf_rows if b_ < a_)
    add(f"*What reclaim changes.* Without the `+reclaim` rows the best technique is within 5% on {plain_met} of "
        f"{ncases} cases; with `+reclaim` on {no_prefetch_met}, and with `+prefetch+reclaim` as well on "
        f"{ncases - len(misses)}. Prefetch hides a request's cost while the worker computes; with reclaim, a "
        "worker that asks ahead and finds the pool empty takes back only what leaves its victim busier than "
        f"itself (docs/skeleton.md \"Reclaim\"); it lowers the makespan against `+reclaim` in {pf_helped} of "
        f"{len(pf_rows)} runs. Over every technique and target case, reclaim "
        f"lowers the makespan in {helped} of {len(rec_rows)} runs; where it does not, the take-back cost more "
        "farmer answers than it won (a thief waits for its victim's next task boundary and two answers). It "
        "removes the late-chunk tail (the load spike on a chunk in flight, the Mandelbrot chunk that holds "
        "more work than its size says); what is left at this size is the farmer's queue: with an answer "
        f"costing {large:g} and every worker asking at the same moments, a request waits for several answers, "
        "and that waiting grows with the number of chunks while the bound grows with S.\n")

    # ---- auto
    add("### Where `auto` ranks\n")
    ranking = auto_ranking(res)
    ncase = ranking[0][-1]
    add("`auto` is `--technique auto` and nothing else (no weights, chunk, sigma or overhead: it measures the workers "
        "over the first tenth of the loop, simulates the candidates over what it measured and goes on with its "
        "choice; docs/techniques/auto.md), under each protocol: alone, `--reclaim`, `--prefetch --reclaim`. Each "
        "row is compared with the fixed rows of its own protocol without the oracle `+weights` (the techniques a "
        "user could have named for that farm; `fsc` is given the true `--sigma` and `--overhead-h`, which `auto` "
        f"does not have), over all {ncase} cases. Its rows are not counted as \"best technique\" anywhere else on "
        "this page.\n")
    add(md_table(["row", "geometric mean over the bound", "rank on it", "best fixed row of the protocol",
                  "its geometric mean", "auto / it", "within 3% of the case's best", "worst (case)",
                  "most frequent first choice"],
                 [[f"`{a}`", f"{g:.4f}", f"{k} of {n}", f"`{b}`", f"{gb:.4f}", f"{g / gb:.3f}",
                   f"{within} of {nc}", f"{worst:.3f} ({wc})", f"`{common}` ({cc} of {nc})"]
                  for a, g, k, n, b, gb, within, worst, wc, common, cc, nc in ranking]) + "\n")
    best_auto = min(ranking, key=lambda r: r[1])
    add(f"The best of the three on the geometric mean is `{best_auto[0]}` ({best_auto[1]:.4f}, "
        f"{100 * (best_auto[1] / best_auto[5] - 1):+.1f}% against `{best_auto[4]}`). The targets of `auto`'s design "
        "(within 3% of the best of the case on 90% of the cases, never worse than 1.10 of it, and better than every "
        "fixed technique on the geometric mean) are " + "; ".join(
            f"{'met' if w_ >= 0.9 * nc and wo <= 1.10 and k == 1 else 'not met'} by `{a}` "
            f"({w_} of {nc} within 3%, worst {wo:.3f}, rank {k})"
            for a, g, k, n, b, gb, w_, wo, wc, common, cc, nc in ranking) + ".\n")

    # ---- González-Vélez & Cole: single round
    add("### González-Vélez & Cole 2009: times-only single round far ahead of isometric single round "
        "(heterogeneous)\n")
    table, cases, beyond = claim_single_round(res)
    add("Makespan / bound of `deal` (SCH_DEAL: equal blocks), `dealdyn-sm` (SCH_DEALDYN_SM: blocks by F from "
        "times-only calibration) and the statistical calibrations `dealdyn-lr` (eq. 5) and `dealdyn-mv` "
        "(eq. 6). \"dealdyn-sm vs deal\" is the change in makespan (González-Vélez & Cole report dealdyn-sm 70% "
        "better on their "
        "parameter sweep). The claim counts as holding where the makespan falls by at least 30%.\n")
    add(table + "\n")
    nh = sum(1 for c in cases if c[2])
    add(f"**Holds on {nh} of {len(cases)}** dedicated heterogeneous cases (by workload: {by_workload(cases)}): " +
        describe_cases([c for c in cases if c[2]], lambda c: f"{c[0]}/{c[1]} {100 * c[3]:+.0f}%") + ". "
        f"**Does not hold** on " +
        describe_cases([c for c in cases if not c[2]], lambda c: f"{c[0]}/{c[1]} ({100 * c[3]:+.0f}%)") +
        ".\n")
    sm_u = res.ratio(hetero_platforms(res)[0], "uniform", "dealdyn-sm")
    deal_u = res.ratio(hetero_platforms(res)[0], "uniform", "deal")
    lr_u = res.ratio(hetero_platforms(res)[0], "uniform", "dealdyn-lr")
    sm_r = res.ratio(hetero_platforms(res)[0], "random", "dealdyn-sm")
    lr_r = res.ratio(hetero_platforms(res)[0], "random", "dealdyn-lr")
    add(f"Where it holds it is the paper's mechanism: `deal` gives a speed-1 worker as many tasks as a speed-4 one "
        f"({deal_u:.2f} on the uniform loop, {hetero_platforms(res)[0]}), `dealdyn-sm` sizes the blocks by "
        f"1/t_i ({sm_u:.3f}). It fails on the **random** loop ({sm_r:.2f}) because calibration times one task per "
        "worker and those tasks' costs differ up to 19:1 (U[0.1, 1.9]): F then measures the task drawn, not the "
        "worker, and a single round never corrects it. The paper's sweep has tasks \"of similar complexity\", "
        "i.e. the uniform case. On the increasing, decreasing and Mandelbrot loops any single round of contiguous "
        "blocks stays far from the bound (the blocks' costs differ along the loop), yet dealdyn-sm is still well "
        "ahead of deal. On the **non-dedicated** platform (beyond the claim) the load changes ten times during "
        "the run, so a single round sized by the loads at t = 0 is stale: dealdyn-sm is between "
        f"{100 * min(c[3] for c in beyond):+.0f}% and {100 * max(c[3] for c in beyond):+.0f}% against deal, and "
        "both are several times the bound. Statistical calibration: `dealdyn-lr` is behind times-only on the "
        f"uniform loop ({lr_u:.3f} vs {sm_u:.3f}), as in the paper (times-only 43% and 33% better than the "
        "statistical modes): eq. 5 fits a straight line t = c0 + c1 a' while the time is inversely proportional "
        "to a' (here a' = availability x benchmark = the speed). On the random loop the same fit helps "
        f"({lr_r:.2f} vs {sm_r:.2f}): it leans on the benchmark, not only on the one noisy time. `dealdyn-mv` "
        "equals `dealdyn-sm` everywhere (see Other observations).\n")

    # ---- González-Vélez & Cole: multi vs work queue
    add("### González-Vélez & Cole 2009: adaptive multi-round ahead of the work queue when overhead matters; "
        "calibration overhead\n")
    table, cases, cal, small = claim_multi_vs_ss(res)
    add(table + "\n")
    na = sum(1 for c in cases if c[2])
    add(f"**Holds on {na} of {len(cases)}** large-overhead cases (multi {min(c[3] for c in cases):.1f} to "
        f"{max(c[3] for c in cases):.1f} times faster than ss), and the calibration overhead is "
        f"**{100 * min(cal):.1f}% to {100 * max(cal):.1f}%** of multi's makespan there (the paper: 0.4% to 3.9%; "
        "\"a few percent\"). With the small overhead the work queue is within "
        f"{100 * (max(res.ratio(c[0], c[1], 'ss') for c in small) - 1):.1f}% of the bound and multi has "
        f"nothing to gain: it is ahead or equal in {sum(1 for c in small if c[2])} of {len(small)} cases, by at "
        f"most {100 * (max(c[3] for c in small) - 1):.1f}%, and behind by up to "
        f"{100 * (1 / min(c[3] for c in small) - 1):.0f}%. The advantage is the overhead saved, as the paper "
        "says.\n")
    homo_large = [n for n in homogeneous_platforms(res) if "large" in n][0]
    add(f"The work queue pays one farmer answer per task: at {large:g} per answer the farmer hands out "
        f"{1 / large:g} tasks per time unit where the workers could use {p} (homogeneous) or "
        f"{sum(speeds):g} (heterogeneous), hence ss at {res.ratio(homo_large, 'uniform', 'ss'):.1f} and "
        f"{res.ratio(het, 'uniform', 'ss'):.1f} times the bound. multi's own weak spots are elsewhere: on the "
        "homogeneous platform the calibration times are equal, CV = 0, k = 1 and multi is one round (the paper: "
        "\"single-round as special case\"), which loses to the work queue on the decreasing and Mandelbrot loops "
        f"({res.ratio(homo_large, 'decreasing', 'multi'):.2f}, {res.ratio(homo_large, 'mandelbrot', 'multi'):.2f} "
        f"on {homo_large}) where equal blocks are unequal work. The calibration share is the time to the barrier "
        "over the makespan: the p calibration tasks and the `wait` answers, one after the other at the farmer; it "
        "falls with the number of tasks.\n")

    # ---- Chronopoulos et al.
    add("### Chronopoulos et al. 2005: distributed (weighted) schemes more balanced than the simple ones "
        "(heterogeneous)\n")
    table, informed, calibrated, cov_informed, nond = claim_weighted_balance(res)
    add("Percent imbalance of the finishing times: simple / distributed with calibration (pfarm's default "
        "without `--weights`) / distributed with the true speeds as `--weights` (the paper's setting: known "
        "virtual powers V_i).\n")
    add(table + "\n")
    add(f"With the speeds known the claim **holds on {sum(c[2] for c in informed)} of {len(informed)}** "
        f"dedicated heterogeneous cases ({by_workload(informed)}; by COV: {sum(c[2] for c in cov_informed)} of "
        f"{len(cov_informed)}). With one-task calibration it **holds on only {sum(c[2] for c in calibrated)} of "
        f"{len(calibrated)}** ({by_workload(calibrated)}). On the non-dedicated platform, with the dedicated "
        f"speeds as weights, on {sum(c[2] for c in nond)} of {len(nond)}.\n")
    add("The simple schemes size chunks as if all workers were equal, so the slowest worker's chunks stick out "
        "at the end; the distributed ones share by A_j and the finishing times line up. Calibrated weights are "
        "only as good as the calibration: right on the uniform loop, nearly right on decreasing and Mandelbrot "
        "(their first p tasks cost about the same), wrong on the increasing loop (the first p tasks cost "
        "2(i + 0.5)/S: a 31:1 spread that is all task cost, no speed) and on the random loop (up to 19:1). "
        "Under changing load the weighted schemes follow the run queue every request carries (Chronopoulos et al.'s "
        "non-dedicated mode, A_j = V_j / Q_j with Q_j = max(1, load factor) in the simulator, fed by the farmer "
        "session as under MPI); calibrated powers are taken as measured under the run queues reported during "
        "calibration, so a load present then is counted once. Given weights describe the dedicated workers.\n")

    # ---- Yang, Cheng & Shih, and HPLS
    add("### Yang, Cheng & Shih 2007 and Yang et al. (HPLS): alpha-based and performance-based schemes vs their "
        "plain counterparts\n")
    het_table, hom_table, cases, behind = claim_two_phase(res)
    add("Heterogeneous, makespan / bound of plain / `n-*+weights` (Yang, Cheng & Shih's N_GSS/N_FSS/N_TSS, alpha = 80, "
        "weights = the speeds, as they weigh by CPU clock) / `hpls-*` (the HPLS of Yang et al., *A performance-based "
        "approach to loop self-scheduling on heterogeneous PC clusters*, alpha = 80, "
        "weights 1/t_j from the calibration):\n")
    add(het_table + "\n")
    add("Ahead of the plain scheme on the dedicated heterogeneous platforms: " + "; ".join(
        f"**{k} {sum(c[2] for c in v)} of {len(v)}** ({by_workload(v)})" for k, v in cases.items()) +
        ". (`an-*` equal `n-*` here: the heterogeneity ratio 1/4 is below alpha' = 80%, so alpha stays 80.)\n")
    add("Homogeneous, against `static` (in parentheses: the difference to static):\n")
    add(hom_table + "\n")
    worst = max(behind, key=lambda b: b[2])
    ahead = [b for b in behind if b[2] < -1e-9]
    gap = {k: [b for b in behind if k in b[0]] for k in ("small", "large")}
    add(f"On the uniform loop, the paper's homogeneous test (matrix multiplication), the two-phase schemes are "
        + ("**never ahead of static** and " if not ahead else f"ahead of static in {len(ahead)} cases and ")
        + f"**{100 * min(b[2] for b in behind):.1f}% to {100 * worst[2]:.1f}% behind** (the most: {worst[1]} on "
        f"{worst[0]}): \"slightly worse than static\" holds. With the large overhead the gap "
        f"({100 * min(b[2] for b in gap['large']):.1f}% to {100 * max(b[2] for b in gap['large']):.1f}%) is the "
        "extra chunks (and, for hpls-*, the calibration); with the small one "
        f"({100 * min(b[2] for b in gap['small']):.1f}% to {100 * max(b[2] for b in gap['small']):.1f}%) only "
        "the tss tail remains (observation 6 below). On the non-uniform loops static's equal blocks are unequal "
        "work and static is the one far behind.\n")
    fails = [(p_, w_, b) for p_ in hetero_platforms(res) for w_ in WORKLOADS for b in ("gss", "fss", "tss")
             if res.ratio(p_, w_, f"n-{b}+weights") >= res.ratio(p_, w_, b)]
    add("Where `n-*+weights` is not ahead: " + describe_cases(
        fails, lambda f: f"{f[0]}/{f[1]} {f[2]} {res.ratio(f[0], f[1], f[2]):.3f} vs n-{f[2]}+weights "
                         f"{res.ratio(f[0], f[1], 'n-' + f[2] + '+weights'):.3f}") + ". "
        "The heterogeneous claim holds where the plain scheme's trouble is the speeds: gss hands its first, "
        "largest chunk R/p to whoever asks first, fss/tss ignore speed, and the 80% static phase by weight fixes "
        "that. It does not hold where 80% of the loop in contiguous static blocks is itself the imbalance: the "
        "Mandelbrot loop (middle columns up to 3.3 times the mean cost) and loops that fss or tss already "
        "balance (increasing, decreasing). hpls-* and `n-*` without weights take the weights from one "
        "calibration task and lose on the increasing and random loops for the calibration reason above.\n")

    # ---- other observations
    add("### Other observations (no simulator bug found; item 6 is a technique decision worth revisiting)\n")
    mv = [r for r in res.rows if r["technique"] in ("dealdyn-mv", "multi-multivariate")]
    lr = [r for r in res.rows if r["technique"] in ("dealdyn-lr", "multi-univariate")]
    mv_fb = sum(1 for r in mv if r["calibration_note"])
    lr_fb = sum(1 for r in lr if r["calibration_note"])
    homo_small = [n for n in homogeneous_platforms(res) if "small" in n][0]
    mi = res.get(homo_small, "increasing", "multi")
    tsd = tss_check(tasks, p)
    het_small = [n for n in hetero_platforms(res) if "small" in n][0]
    add(f"1. **One-task calibration measures the task as much as the worker.** On the increasing and random "
        "loops every calibrating technique is misled (tables above). It also explains the largest chunk counts: "
        f"`multi` on {homo_small}/increasing hands out {mi['chunks']} chunks for {tasks:,} tasks. Worker 0's "
        "calibration task is the cheapest of the loop, so F_0 is large; worker 0 gets a large first installment, "
        "and until it reports back the other workers' F_i stay near 0 and they get one task per request. "
        "That is eq. 4 and eq. 9 as documented, not a code bug. Calibrating on tasks spread over the "
        "loop, or on more than one task, would avoid it.\n"
        f"2. **`dealdyn-mv` and `multi --calibration multivariate` always fall back to times-only** in the "
        f"simulator ({mv_fb} of {len(mv)} runs carry the fall-back note): the simulated monitors report the same "
        "latency for every worker (2 x `--latency`), so eq. 6's design matrix [1, l, a'^2] is singular. Their "
        "rows repeat the times-only rows; the simulator cannot test eq. 6 until latencies differ per worker. "
        f"`dealdyn-lr`/`multi-univariate` fall back in {lr_fb} of {len(lr)} runs: "
        f"{sum(1 for r in lr if r['calibration_note'] and r['platform'].startswith('homogeneous'))} on the "
        "homogeneous platforms (every a' equal: singular), "
        f"{sum(1 for r in lr if r['calibration_note'] and 'nondedicated' in r['platform'])} on the "
        "non-dedicated ones (a fitted time <= 0).\n"
        "3. **Factoring-style schemes without weights cannot beat 1.25 on the dedicated heterogeneous uniform "
        f"loop** (fss, awf, awf-b, awf-d, af: {res.ratio(het_small, 'uniform', 'fss'):.3f}, "
        f"{res.ratio(het_small, 'uniform', 'awf'):.3f}, {res.ratio(het_small, 'uniform', 'awf-b'):.3f}, "
        f"{res.ratio(het_small, 'uniform', 'awf-d'):.3f}, {res.ratio(het_small, 'uniform', 'af'):.3f}). Every "
        "worker gets S/(2p) at t = 0, before anything is measured, and the speed-1 worker needs S/(2p) time "
        "units for it, i.e. (sum of speeds)/(2p) = 1.25 times the bound. The adaptive weights act only from the "
        "second batch. Initial `--weights` (awf*) or a calibration would remove it.\n"
        f"4. **gss on a decreasing loop** ({res.ratio(homo_small, 'decreasing', 'gss'):.2f} on {homo_small}): "
        "the first chunk R/p takes the most expensive tasks. This is the classic GSS weakness that motivated "
        "TSS and FSS (Yang, Cheng & Shih 2007), not a defect.\n"
        f"5. **fsc on {homo_large}/uniform** ({res.ratio(homo_large, 'uniform', 'fsc'):.3f}, "
        f"{res.get(homo_large, 'uniform', 'fsc')['chunks']} chunks) reflects the sigma floor of 0.05 (a uniform "
        "loop on equal workers has sigma = 0, which fsc rejects): Kruskal-Weiss then picks large chunks, "
        f"and {p} workers do not divide their number evenly.\n"
        f"6. **`tss` stops short of its small chunks** ({res.ratio(homo_small, 'uniform', 'tss'):.3f} on "
        f"{homo_small}/uniform, where gss and fss reach {res.ratio(homo_small, 'uniform', 'gss'):.3f} and "
        f"{res.ratio(homo_small, 'uniform', 'fss'):.3f}; `dtss` and `tfss` inherit it). "
        "pfarm floors the decrement, D = floor((F - L)/(N - 1)) (docs/techniques/simple.md, following "
        "Chronopoulos et al. 2005's printed table): "
        f"with S = {tasks:,} and p = {p}, F = {tsd['F']}, N = {tsd['N']}, D = {tsd['D']} instead "
        f"of {tsd['exact']:.2f}, so the sequence covers the loop after {tsd['chunks_floor']} of its {tsd['N']} "
        f"chunks and its last {p} chunks still hold {tsd['last_floor']} to {tsd['last_max_floor']} tasks, not 1. "
        "A list-scheduling check in "
        f"run_quality.py (equal workers, no overhead) gives {tsd['ratio_floor']:.3f} with the floored D and "
        f"{tsd['ratio_exact']:.3f} with the exact one. That is a documented decision, but it costs TSS its "
        "tail; worth revisiting (e.g. round each chunk of the exact trapezoid instead).\n")

    # ---- plots
    if fig4_workers is not None:
        add("## Plots\n")
        add("![makespan over the bound, every technique](img/quality_overview.png)\n")
        add("![the papers' claims](img/quality_claims.png)\n")
        add("González-Vélez & Cole 2009, Fig. 4, in the simulator: `multi`'s installments on the non-dedicated "
            "platform (workers "
            + ", ".join(f"w{w}" for w in fig4_workers) + ", the four with the widest load swings): the "
            "installment size falls when a worker's load rises and recovers when it drops.\n")
        add("![multi under changing load](img/quality_fig4.png)\n")

    # ---- pivots and the full table
    add("## Makespan / lower bound per platform\n")
    for pn in res.platforms:
        add(f"### {pn}\n")
        rows = []
        for t in res.techniques():
            cells = []
            for w in WORKLOADS:
                v = res.ratio(pn, w, t)
                best = min(res.ratio(pn, w, u) for u in res.techniques() if u not in AUTO)
                cells.append(f"**{v:.3f}**" if v <= best else f"{v:.3f}")
            rows.append([f"`{t}`"] + cells)
        add(md_table(["technique"] + WORKLOADS, rows, ["---"] + ["---:"] * len(WORKLOADS)) + "\n")
    add("## Full table\n")
    add("The CSV, row for row (best fixed technique per platform and workload in bold above, and the `auto` rows "
        "where they match or beat it).\n")
    add(md_table(HEADER, [fmt_row(r) for r in res.rows], ["---"] * 3 + ["---:"] * 4))
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------------------

def find_sim():
    for c in [os.environ.get("PFARM_SIM", "")] + [os.path.join(REPO, b, "bin", "pfarm-sim") for b in
                                                   ("build/release", "build-quality", "build", "build-sim-rel")]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise SystemExit("run_quality.py: pfarm-sim not found; build it (cmake --build <build> --target pfarm-sim) "
                     "and pass --sim <build>/bin/pfarm-sim")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="16 workers, 100,000 tasks (a few minutes)")
    size.add_argument("--tiny", action="store_true", help="4 workers, 400 tasks, two workloads (smoke test; needs --out)")
    ap.add_argument("--sim", help="pfarm-sim executable (default: $PFARM_SIM or a build folder of this checkout)")
    ap.add_argument("--out", help="output folder (default: docs/ of this checkout; --tiny must name another one)")
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 1), help="simulations run at once")
    ap.add_argument("--gnuplot", default="gnuplot", help="gnuplot executable (default: gnuplot on PATH)")
    ap.add_argument("--no-plots", action="store_true", help="write the CSV and the Markdown only")
    ap.add_argument("--print-command", nargs=3, metavar=("PLATFORM", "WORKLOAD", "TECHNIQUE"),
                    help="print the pfarm-sim command of one row of the table and exit")
    args = ap.parse_args(argv)

    sim = args.sim or find_sim()
    mode = "full" if args.full else "tiny" if args.tiny else "default"
    p, tasks = SIZES[mode]["workers"], SIZES[mode]["tasks"]
    platforms = make_platforms(p, tasks)
    SHAPE_CV["mandelbrot"] = mandelbrot_cv()

    if args.print_command:
        pn, w, t = args.print_command
        if pn not in platforms or w not in WORKLOADS or t not in technique_list():
            raise SystemExit("unknown platform, workload or technique")
        print(shlex.join(command(sim, platforms[pn], w, t, tasks)))
        return 0

    out = os.path.abspath(args.out or DOCS)
    if mode == "tiny" and (args.out is None or os.path.realpath(out) == os.path.realpath(DOCS)):
        raise SystemExit("run_quality.py: --tiny writes a partial table; give --out a folder other than docs/")
    gp = None
    if not args.no_plots:
        gp = shutil.which(args.gnuplot)
        if gp is None:
            raise SystemExit(f"run_quality.py: gnuplot ('{args.gnuplot}') not found; install gnuplot or pass "
                             "--no-plots")
    os.makedirs(out, exist_ok=True)

    if mode == "tiny":
        WORKLOADS[:] = TINY_WORKLOADS
    started = time.time()
    techniques = technique_list()
    runs = [(pn, w, t) for pn in platforms for w in WORKLOADS for t in techniques]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, sim, pn, platforms[pn], w, t, tasks) for pn, w, t in runs]
        rows = [f.result() for f in futures]

    # The target's size check: the best techniques of every heterogeneous/non-dedicated case at 10x (default,
    # tiny) or 1/10 (full) the tasks, on the same platforms rebuilt for that size.
    other_tasks = tasks // 10 if mode == "full" else tasks * 10
    other_platforms = make_platforms(p, other_tasks)
    res = Results(rows, platforms)
    checks = [(pn, w, t) for pn in target_platforms(res) for w in WORKLOADS for t in target_candidates(res, pn, w)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, sim, pn, other_platforms[pn], w, t, other_tasks) for pn, w, t in checks]
        other = {(r["platform"], r["workload"], r["technique"]): r for r in (f.result() for f in futures)}
    elapsed = time.time() - started

    csv_path = os.path.join(out, "quality.csv")
    write_csv(rows, csv_path)
    check_csv(csv_path, len(runs))
    fig4_workers = None
    if gp:
        with tempfile.TemporaryDirectory() as tmp:
            fig4_workers = plot_all(res, platforms, sim, tasks, gp, os.path.join(out, "img"), tmp)
    md = markdown(res, platforms, mode, p, tasks, elapsed, fig4_workers, other, other_tasks)
    with open(os.path.join(out, "quality.md"), "w") as f:
        f.write(md)
    print(f"run_quality.py: {len(runs) + len(checks)} simulations ({mode}: {p} workers, {tasks} tasks) in {elapsed:.1f} s; "
          f"wrote {csv_path}, {os.path.join(out, 'quality.md')}" + (f", {os.path.join(out, 'img')}" if gp else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
