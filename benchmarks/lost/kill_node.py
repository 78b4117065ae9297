#!/usr/bin/python3
# Lost-node kill runs (docs/reliability.md "A lost node"): pfarm-calcium (the flat farmer) on 4 ranks across an
# emulated cluster of 3 nodes (tests/cluster/pfarm-cluster; ranks 0-1 on node0, 2 on node1, 3 on node2, CPU quotas
# 0.8, 0.4 and 0.2 of a core) under Open MPI's recovery mode (`pfarm-cluster run --recovery`), once uninterrupted as
# the reference, then N runs in which a node holding only a worker (node1 or node2, at random) is killed whole
# (`pfarm-cluster kill`: its rank and its orted SIGKILLed) at a random time after the sweep's first result (uniform
# over the reference's time from its first result to its rank 0's exit). Each run must end (no hang, within its
# bound + 30 s); name the killed node's ranks (from the ranks' own hostname) as the lost ranks, every living rank
# exiting 3 and `run --recovery` exiting 3 (mpirun ended once it waited only for the lost node); or, when the kill
# came after the node's rank had left the farm, no lost rank, every status 0 and exit 0; write every output file
# byte-identical to the reference; and have a makespan within
#   bound = reference makespan / (1 - share) + 2 x (4 E + S)
# share being the killed node's part of the reference's tasks, E the reference's longest chunk, S the slack of
# --on-worker-loss continue=S. It prints one line per run and a summary, and exits 1 if any check failed; a failed
# run's folder is kept under --work. Needs root; makes its own cluster (--name) and tears it down at the end.
#   kill_node.py [--runs N] [--seed K] [--calcium BIN] [--harness PATH] [--name NAME] [--work DIR] [--slack S]
#                [--experiments N]
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kill_calcium import chunk_times, compare, files, first_result, sweep  # noqa: E402

RANKS = 4
HOSTS = "node0:2,node1:1,node2:1"
WORKER_NODES = ["node1", "node2"]
# Each rank's shell records its hostname and exit status (mpirun under recovery mode exits 0 whatever its ranks do).
WRAP = ["sh", "-c", 'echo "$(hostname)" >host.$OMPI_COMM_WORLD_RANK; "$0" "$@"; s=$?; '
        'echo $s >status.$OMPI_COMM_WORLD_RANK; exit $s']


def parse_args():
    root = Path(__file__).resolve().parents[2]
    p = argparse.ArgumentParser(description="Kills a whole emulated node during pfarm-calcium runs")
    p.add_argument("--runs", type=int, default=10, help="runs with a killed node (default 10)")
    p.add_argument("--seed", type=int, default=7, help="seed of the killed nodes and times (default 7)")
    p.add_argument("--calcium", default=str(root / "build/release/bin/pfarm-calcium"), help="pfarm-calcium")
    p.add_argument("--harness", default=str(root / "tests/cluster/pfarm-cluster"), help="pfarm-cluster")
    p.add_argument("--name", default="killnode", help="the cluster's name (default killnode)")
    p.add_argument("--work", default="/tmp/pfarm-kill-node", help="working directory (emptied first)")
    p.add_argument("--slack", type=float, default=2.0, help="S of --on-worker-loss continue=S (default 2)")
    p.add_argument("--experiments", type=int, default=120, help="experiments of the sweep (default 120)")
    args = p.parse_args()
    if args.runs < 0:
        p.error(f"--runs is {args.runs}; expected 0 or more")
    if args.experiments < 1:
        p.error(f"--experiments is {args.experiments}; expected 1 or more")
    args.calcium = str(Path(args.calcium).resolve())
    if not os.access(args.calcium, os.X_OK):
        p.error(f"--calcium is '{args.calcium}', which is not an executable file")
    if os.geteuid() != 0:
        p.error("needs root (the emulated cluster's namespaces and cgroups)")
    return args


def harness(args, *rest, **kw):
    return subprocess.run([args.harness, "--name", args.name, *rest], **kw)


def start(args, d, trace=None):
    argv = [args.harness, "--name", args.name, "run", "--recovery", "--host", HOSTS, "--", *WRAP, args.calcium,
            *sweep(args.experiments), "--json", "--quiet", "--on-worker-loss", f"continue={args.slack:g}",
            *(["--trace", "trace.csv"] if trace else []), "--output", "out"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.Popen(argv, cwd=d, env=env, stdout=open(d / "stdout.txt", "w"),
                            stderr=open(d / "stderr.txt", "w"), start_new_session=True)


def rank_files(d, what):
    return {r: (d / f"{what}.{r}").read_text().strip() if (d / f"{what}.{r}").exists() else None
            for r in range(RANKS)}


def report(d):
    t = (d / "stdout.txt").read_text()
    try:
        return json.loads(t[t.index("{"):t.rindex("}") + 1])
    except ValueError:
        return None


def reference(args, work):
    d = work / "reference"
    d.mkdir()
    t0, t0_epoch = time.monotonic(), time.time()
    job, first_at = start(args, d, trace=True), None
    while job.poll() is None and time.monotonic() - t0 < 120:
        if first_at is None and first_result(d):
            first_at = time.monotonic() - t0
        time.sleep(0.01)
    if job.poll() is None:
        os.killpg(job.pid, signal.SIGTERM)
        sys.exit("kill_node: the reference run (no kill) did not end within 120 s")
    wall = time.monotonic() - t0
    r = report(d)
    if job.returncode != 0 or r is None or r["lost_ranks"] or first_at is None:
        sys.exit(f"kill_node: the reference run failed: exit {job.returncode}, "
                 f"{(d / 'stderr.txt').read_text()[-2000:]}")
    rank0_exit = (d / "status.0").stat().st_mtime - t0_epoch
    hosts = rank_files(d, "host")
    share = {n: sum(r["tasks_per_rank"][k] for k in range(RANKS) if hosts[k] == n) / r["tasks"] for n in WORKER_NODES}
    return (d, wall, first_at, rank0_exit, r["makespan"], max(c[2] for c in chunk_times(d / "trace.csv")), share,
            hosts)


def one_run(args, work, i, node, kill_at, ref, bound):
    d = work / f"run{i:03d}"
    d.mkdir()
    t0 = time.monotonic()
    job, first_at, killed_at = start(args, d), None, None
    while job.poll() is None and killed_at is None:
        now = time.monotonic() - t0
        if first_at is None and first_result(d):
            first_at = now
        if first_at is not None and now >= first_at + kill_at:
            harness(args, "kill", node, capture_output=True)
            killed_at = now
        time.sleep(0.005)
    limit = bound + 30
    try:
        job.wait(timeout=max(1.0, limit - (time.monotonic() - t0)))
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(job.pid, signal.SIGTERM)
        job.wait()
    wall, end_epoch = time.monotonic() - t0, time.time()
    r0_end = (d / "status.0").stat().st_mtime if (d / "status.0").exists() else None
    hosts, status = rank_files(d, "host"), rank_files(d, "status")
    on_node = sorted(k for k, h in hosts.items() if h == node)
    r = report(d)
    failures = []
    if hung:
        failures.append(f"hung: still running {limit:.0f} s after mpirun started")
    if r is None:
        failures.append("no JSON report on standard output")
    lost = r["lost_ranks"] if r else None
    if r is not None:
        want = 3 if lost else 0
        if lost not in (on_node, []):
            failures.append(f"lost ranks {lost} ({node}'s ranks: {on_node})")
        wrong = {k: s for k, s in status.items() if k not in on_node and s != str(want)}
        if wrong:
            failures.append(f"exit statuses of living ranks {wrong} (want {want})")
        if job.returncode != want and not hung:
            failures.append(f"run --recovery exited {job.returncode} (want {want})")
    bad, same = compare(ref / "out", d / "out")
    failures += bad[:5] + ([f"... {len(bad) - 5} more"] if len(bad) > 5 else [])
    makespan = r["makespan"] if r else float("nan")
    if makespan > bound:
        failures.append(f"makespan {makespan:.2f} s over the bound {bound:.2f} s")
    if not failures:
        shutil.rmtree(d)
    return dict(node=node, ranks=on_node, killed_at=killed_at, first_at=first_at, rc=job.returncode, status=status,
                lost=lost, makespan=makespan, wall=wall, same=same, failures=failures,
                rank0_to_end=end_epoch - r0_end if r0_end else None)


def main():
    sys.stdout.reconfigure(line_buffering=True)
    args = parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    up = harness(args, "up", "--replace", "--nodes", "3", "--slots", "2,1,1", "--quota", "0.8,0.4,0.2",
                 capture_output=True, text=True)
    if up.returncode != 0:
        sys.exit(f"kill_node: pfarm-cluster up: {up.stderr}")
    try:
        return runs(args, work)
    finally:
        harness(args, "down", capture_output=True)


def runs(args, work):
    ref, ref_wall, ref_first, ref_exit, ref_makespan, e_ref, share, hosts = reference(args, work)
    n_files = len(files(ref / "out"))
    print(f"kill_node: {RANKS} ranks on {HOSTS} (quotas 0.8, 0.4, 0.2), {' '.join(sweep(args.experiments))}, "
          f"--on-worker-loss continue={args.slack:g}, pfarm-cluster run --recovery")
    print(f"reference: wall {ref_wall:.2f} s, first experiment file at {ref_first:.2f} s, rank 0's exit at "
          f"{ref_exit:.2f} s, makespan "
          f"{ref_makespan:.3f} s, longest chunk E = {e_ref:.3f} s, {n_files} output files, ranks on "
          f"{' '.join(f'{k}:{h}' for k, h in hosts.items())}, task shares "
          f"{', '.join(f'{n} {s:.2f}' for n, s in share.items())}")
    bounds = {n: ref_makespan / (1 - share[n]) + 2 * (4 * e_ref + args.slack) for n in WORKER_NODES}
    print("makespan bounds: " + ", ".join(f"{n} killed {b:.2f} s" for n, b in bounds.items()))
    window = ref_exit - ref_first
    print(f"kills: node uniform in {', '.join(WORKER_NODES)}, time uniform in [0, {window:.2f}) s after the run's "
          f"first experiment file (the reference's time from its own to rank 0's exit), seed {args.seed}")
    rng = random.Random(args.seed)
    results = []
    for i in range(args.runs):
        node, kill_at = rng.choice(WORKER_NODES), rng.uniform(0, window)
        r = one_run(args, work, i, node, kill_at, ref, bounds[node])
        results.append(r)
        killed = f"{r['killed_at']:.2f}" if r["killed_at"] is not None else "-"
        tail = f"{r['rank0_to_end']:.1f}" if r["rank0_to_end"] is not None else "-"
        print(f"run {i:2d}: {node} (ranks {r['ranks']}) killed at {killed:>5} s (first result "
              f"{r['first_at'] or 0:.2f} s) run --recovery {r['rc']} statuses "
              f"{[r['status'][k] for k in range(RANKS)]} lost {r['lost']} makespan {r['makespan']:.2f} s "
              f"(bound {bounds[node]:.2f}) wall {r['wall']:.2f} s (rank 0's exit to the end {tail} s) files "
              f"{r['same']}/{n_files} same: " + ("ok" if not r["failures"] else "FAIL " + "; ".join(r["failures"])))
    failed = [r for r in results if r["failures"]]
    lost = [r for r in results if r["lost"]]
    unkilled = [r for r in results if r["killed_at"] is None]
    print(f"\n{len(results) - len(failed)}/{len(results)} runs passed every check; {len(lost)} with the node's rank "
          f"lost, {len(results) - len(lost) - len(unkilled)} killed after its rank had left the farm, {len(unkilled)} "
          f"not killed (the run ended before its kill time); makespan / bound at most "
          f"{max((r['makespan'] / bounds[r['node']] for r in results), default=float('nan')):.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
