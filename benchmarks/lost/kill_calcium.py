#!/usr/bin/python3
# Lost-worker kill runs (issue 31's targets, flat farm; docs/reliability.md "A lost worker"): pfarm-calcium on
# 4 ranks under Open MPI's recovery mode, once uninterrupted as the reference, then N runs in which one worker
# rank (1..3, at random) is SIGKILLed at a random time within the run. Each run must end (no hang); name the
# killed rank as the one lost rank, every living rank exiting 3 (none lost and status 0 when the kill came after
# the rank had left the farm), mpirun exiting 0; write every output file byte-identical to the reference; and have
# a makespan within
#   bound = W / W_left x reference makespan + 2 x (4 E + S)
# the work over the remaining speed (W computing ranks in the reference, W_left of them left when the killed rank is
# gone: a worker, or a hierarchical master with the workers of its group) plus two detection deadlines, a deadline
# being the documented 4 x a chunk's expected time + the slack S. For a worker, E is the longest chunk's compute time
# in the reference's trace (with 2 workers on 2 cores a task takes no longer than with 3). For a hierarchical master
# it is what rank 0's deadline for it scales with (farmer::silent_past): its largest chunk in the reference (the
# report's masters.trace) times its pace there (its chunks' seconds in the group over their tasks). A run still going
# at bound + 5 s is hung: every living rank's stack goes to its folder (gdb) before it is ended. It prints one line per run and a summary, and
# exits 1 if any check failed. A failed run's folder is kept under --work.
# When each kill fell: the script watches for the sweep's first experiment file (rank 0 writes it as the first result
# arrives, once every rank is past MPI_Init and the farm's setup). A kill before it is "before the first result"; of
# those, one that came before every rank was past MPI_Init and the farm's setup cannot be survived (Open MPI waits in
# MPI_Init, or a collective waits for the dead rank: docs/reliability.md "A lost worker"): the startup's bound
# (PFARM_STARTUP_TIMEOUT, --startup-timeout, 10 s here) ends every living rank with status 4 and its message, "before
# the farm began", which the script checks; with the bound off (--startup-timeout 0) such a run hangs, and one whose
# ranks are left in MPI_Init (their stacks) counts as "before MPI_Init completed", as does one whose living ranks Open
# MPI ends itself, its MPI_Init failing (the dead peer unreachable: "An error occurred in MPI_Init", status non-zero).
# The summary gives those counts apart from the kills while pfarm runs. With --after-first-result every kill falls after that file, at a time uniform in the reference's
# remaining wall time (the ctest entry's form: every run must pass).
# With --app mandelbrot the job is pfarm-mandelbrot (1600 x 1600 points, 6000 iterations at most, fss) under
# --farmer FARMER (decentralised, say, which pfarm-calcium's streamed results exclude), its image the output compared;
# it writes nothing while it runs, so every kill is timed from mpirun's start, between when the reference's farm
# started (its wall time less its makespan) and its end.
#   kill_calcium.py [--runs N] [--seed K] [--calcium BIN] [--mpiexec MPIRUN] [--work DIR] [--slack S]
#                   [--experiments N] [--after-first-result] [--app calcium|mandelbrot] [--mandelbrot BIN]
#                   [--farmer flat|hierarchical|decentralised] [--ranks N] [--masters K]
import argparse
import collections
import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

RANKS = 4
# A sweep of about 5 s on a 2-core machine with 3 workers (240 experiments of 2000 channels x 5000 steps, by default),
# multi with a pinned installment factor so that chunks stay under a second and the deadlines short; the
# per-experiment files are kept (every 10th step) so that they can be compared.
def sweep(experiments):
    return ["--channels", "2000", "--steps", "5000", "--peak-duration", "0.03", "--experiments", str(experiments),
            "--trace-stride", "10", "--technique", "multi", "--k", "8"]


def parse_args():
    root = Path(__file__).resolve().parents[2]
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=50, help="runs with a killed worker (default 50)")
    p.add_argument("--seed", type=int, default=31, help="seed of the kill ranks and times (default 31)")
    p.add_argument("--calcium", default=str(root / "build/release/bin/pfarm-calcium"), help="pfarm-calcium")
    p.add_argument("--mpiexec", default=shutil.which("mpirun") or "mpirun", help="Open MPI's mpirun")
    p.add_argument("--work", default="/tmp/pfarm-kill-calcium", help="working directory (emptied first)")
    p.add_argument("--slack", type=float, default=0.5, help="S of --on-worker-loss continue=S (default 0.5)")
    p.add_argument("--timeout", type=float, default=0,
                   help="seconds after which a run counts as hung (default: its makespan bound + 5)")
    p.add_argument("--experiments", type=int, default=240, help="experiments of the sweep (default 240)")
    p.add_argument("--after-first-result", action="store_true",
                   help="kill only after the sweep's first experiment file exists (MPI_Init and the setup are over)")
    p.add_argument("--startup-timeout", type=float, default=10,
                   help="PFARM_STARTUP_TIMEOUT of the runs: the startup's bound, 0 off (default 10)")
    p.add_argument("--app", choices=["calcium", "mandelbrot"], default="calcium", help="the job (default calcium)")
    p.add_argument("--mandelbrot", default=str(root / "build/release/bin/pfarm-mandelbrot"), help="pfarm-mandelbrot")
    p.add_argument("--farmer", choices=["flat", "hierarchical", "decentralised"], default="flat",
                   help="the farm (default flat)")
    p.add_argument("--ranks", type=int, default=4, help="ranks of the job (default 4; the killed one: 1..N-1)")
    p.add_argument("--masters", type=int, default=0,
                   help="--farmer hierarchical: --masters K (default 0: one per node, so one here)")
    args = p.parse_args()
    global RANKS
    RANKS = args.ranks
    if args.ranks < 2:
        p.error(f"--ranks is {args.ranks}; expected 2 or more")
    if args.masters and args.farmer != "hierarchical":
        p.error("--masters: only with --farmer hierarchical")
    if args.app == "mandelbrot" and args.after_first_result:
        p.error("--after-first-result: pfarm-mandelbrot writes nothing before its end; kill from mpirun's start")
    if args.app == "calcium" and args.farmer == "decentralised":
        p.error("--farmer decentralised: pfarm-calcium streams its results, which the decentralised farm does not "
                "carry; use --app mandelbrot")
    if args.runs < 0:
        p.error(f"--runs is {args.runs}; expected 0 or more")
    if args.experiments < 1:
        p.error(f"--experiments is {args.experiments}; expected 1 or more")
    args.calcium = str(Path(args.calcium).resolve())  # the runs start in folders of their own
    args.mandelbrot = str(Path(args.mandelbrot).resolve())
    if not os.access(getattr(args, args.app), os.X_OK):
        p.error(f"--{args.app} is '{getattr(args, args.app)}', which is not an executable file")
    return args


def env(startup_timeout):
    e = dict(os.environ)
    e["OMPI_MCA_orte_enable_recovery"] = "1"
    e["PFARM_STARTUP_TIMEOUT"] = f"{startup_timeout:g}"
    return e


# Each rank runs under a shell that records its exit status in status.RANK: under recovery mode Open MPI 4.1's
# mpirun exits 0 whatever its ranks' statuses (even `mpirun -n 2 sh -c 'exit 3'`), so the apps' status 3 is
# checked where it is returned.
WRAP = ['sh', '-c', '"$0" "$@"; s=$?; echo $s >status.$OMPI_COMM_WORLD_RANK; exit $s']


def command(args, out_dir, trace=None):
    job = [args.calcium, *sweep(args.experiments), "--output", str(out_dir)]
    if args.app == "mandelbrot":  # about 2 s on 2 cores with 3 workers
        job = [args.mandelbrot, "--width", "1600", "--height", "1600", "--max-iterations", "6000", "--technique", "fss",
               "--verify", "none", "--output", f"{out_dir}/image.pgm"]
    if args.masters:
        job += ["--masters", str(args.masters)]
    return [args.mpiexec, "-n", str(RANKS), "--oversubscribe", *WRAP, *job, "--farmer", args.farmer, "--json", "--quiet",
            "--on-worker-loss", f"continue={args.slack:g}", *(["--trace", str(trace)] if trace else [])]


def children(pid):
    """The pids whose parent is pid."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces; the parent pid is the 2nd field after it.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def rank_pid(mpirun_pid, rank):
    """The pid of the pfarm-calcium under mpirun (below its shell) whose environment says it is rank `rank`."""
    want = f"OMPI_COMM_WORLD_RANK={rank}".encode()
    for pid in [g for c in children(mpirun_pid) for g in children(c)]:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if want in environ:
            return pid
    return None


def chunk_times(trace):
    """(rank, count, compute seconds, calibration) of every chunk in a --trace CSV."""
    rows = csv.DictReader(line for line in open(trace) if not line.startswith("#"))
    return [(int(r["rank"]), int(r["count"]), float(r["finished"]) - float(r["started"]), r["calibration"] == "1")
            for r in rows]


def files(directory):
    return sorted(p.relative_to(directory) for p in directory.rglob("*") if p.is_file())


def compare(ref, out):
    """The files that differ from the reference (missing, extra or not byte-identical), and how many match."""
    if not out.is_dir():
        return ["(no output directory)"], 0
    ref_files, out_files = files(ref), files(out)
    bad = [f"missing {f}" for f in sorted(set(ref_files) - set(out_files))]
    bad += [f"extra {f}" for f in sorted(set(out_files) - set(ref_files))]
    same = 0
    for f in sorted(set(ref_files) & set(out_files)):
        if subprocess.run(["cmp", "-s", str(ref / f), str(out / f)]).returncode == 0:
            same += 1
        else:
            bad.append(f"differs {f}")
    return bad, same


def first_result(d):
    """Whether the sweep's first experiment file is there (rank 0 writes one as each result arrives)."""
    try:
        with os.scandir(d / "out" / "experiments") as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def reference(args, work):
    d = work / "reference"
    d.mkdir()
    (d / "out").mkdir()
    start = time.monotonic()
    job = subprocess.Popen(command(args, "out", "trace.csv"), cwd=d, env=env(args.startup_timeout), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    first_at = None
    while job.poll() is None and first_at is None and time.monotonic() - start < 60:
        if first_result(d):
            first_at = time.monotonic() - start
        time.sleep(0.005)
    try:
        stdout, stderr = job.communicate(timeout=max(1.0, 60 - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        hung_in = stacks(job.pid, d)
        os.killpg(job.pid, signal.SIGKILL)
        stdout, stderr = job.communicate()
        sys.exit(f"kill_calcium: the reference run (no kill) hung, rank 0 in {hung_in} ({d}/stacks.txt); "
                 f"its standard error:\n{stderr[-3000:]}")
    wall = time.monotonic() - start
    (d / "stderr.txt").write_text(stderr)
    status = [(d / f"status.{r}").read_text().strip() if (d / f"status.{r}").exists() else None for r in range(RANKS)]
    if job.returncode != 0 or status != ["0"] * RANKS:
        sys.exit(f"kill_calcium: the reference run (no kill) failed: mpirun {job.returncode}, ranks {status}:\n"
                 f"{stderr[-3000:]}")
    report = json.loads(stdout)
    if report["lost_ranks"]:
        sys.exit(f"kill_calcium: the reference run lost ranks {report['lost_ranks']}")
    chunks = chunk_times(d / "trace.csv")
    if args.app == "mandelbrot":
        first_at = 0.0  # nothing is written before the end
    if first_at is None:
        sys.exit("kill_calcium: the reference run wrote no experiment file while it ran")
    return d, wall, first_at, report, max(c[2] for c in chunks), len(files(d / "out"))


def master_chunk_time(trace, master):
    """A master's E, what rank 0's deadline for it scales with (farmer::silent_past: its oldest chunk's tasks times
    its pace): its largest chunk times its pace (the seconds its chunks took in the group over their tasks), from
    the report's masters.trace."""
    mine = [c for c in trace if c["rank"] == master]
    done = sum(c["count"] for c in mine)
    if not done:
        return 0.0
    pace = sum(c["finished"] - c["started"] for c in mine) / done
    return max(c["count"] for c in mine) * pace


def lost_with(masters, rank):
    """The computing ranks a kill of `rank` takes out: it, and for a hierarchical master (`masters`: their ranks) the
    rest of its group (a contiguous range of ranks up to the next master)."""
    if rank not in masters:
        return {rank}
    following = [m for m in masters if m > rank]
    return set(range(rank, following[0] if following else RANKS))


def bounds(report, e_ref, slack):
    """Per rank that may be killed: (its makespan bound, the W / W_left factor, its E)."""
    computing = {q for q, n in enumerate(report["tasks_per_rank"]) if n > 0}
    masters = report.get("masters", {})
    out = {}
    for rank in range(1, RANKS):
        left = len(computing - lost_with(masters.get("ranks", []), rank))
        factor = len(computing) / left if left else float("inf")
        e = max(e_ref, master_chunk_time(masters.get("trace", []), rank)) if rank in masters.get("ranks", []) else e_ref
        out[rank] = (factor * report["makespan"] + 2 * (4 * e + slack), factor, e)
    return out


def stacks(mpirun_pid, d):
    """Every living rank's stack (gdb), written to d/stacks.txt; the MPI call rank 0 waits in, if any."""
    text = []
    for pid in sorted(g for c in children(mpirun_pid) for g in children(c)):
        try:
            rank = [v for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                    if v.startswith(b"OMPI_COMM_WORLD_RANK=")][0].decode().split("=")[1]
        except (OSError, IndexError):
            continue
        bt = subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt 25"],
                            capture_output=True, text=True, timeout=60).stdout if shutil.which("gdb") else ""
        text.append(f"=== rank {rank} (pid {pid})\n{bt}")
    (d / "stacks.txt").write_text("\n".join(text))
    rank0 = next((t for t in text if t.startswith("=== rank 0 ")), "")
    # The MPI call rank 0 waits in and the pfarm function that made it.
    calls = re.findall(r" in P?(MPI_\w+) \(", rank0)
    callers = re.findall(r" in (?:\(anonymous namespace\)::)?((?:pfarm::)?[\w:]+)\(", rank0.split(calls[0])[1]) if calls else []
    return (calls[0] + (f" from {callers[0]}" if callers else "")) if calls else "?"


PHASES = ["before MPI_Init completed", "before the farm began", "before the first result", "mid-run", "after",
          "after exit"]
STARTUP_LOST = "a rank was lost before the farm began"  # pfarm::mpi::guard_startup's message (exit status 4)
INIT_FAILED = "An error occurred in MPI_Init"  # Open MPI's own end of the living ranks when a peer died in MPI_Init


def phase(report, killed_at, before_first, hung_in, startup_ended=False, init_failed=False):
    """Where the kill fell: before MPI_Init completed (the others left in MPI_Init with the startup's bound off, or
    failed there by Open MPI: its MPI_Init reports the dead peer unreachable and aborts them), before
    the farm began (every living rank ended by the startup's bound, status 4), before the sweep's first result
    (the farm's setup, its first chunks), mid-run (a lost rank reported, or the run hung), after the rank left the farm
    (no lost rank: killed before its exit, or found already exited)."""
    if killed_at is None:
        return "after exit"
    if (hung_in and hung_in.startswith("MPI_Init")) or init_failed:
        return "before MPI_Init completed"
    if report is None and not hung_in and startup_ended:
        return "before the farm began"
    if before_first:
        return "before the first result"
    if report is not None and not report["lost_ranks"]:
        return "after"
    return "mid-run"


def one_run(args, work, i, rank, kill_at, ref, bound):
    """Kills `rank` at kill_at seconds after mpirun starts (with --after-first-result: after the sweep's first
    experiment file), then checks the run."""
    d = work / f"run{i:03d}"
    d.mkdir()
    (d / "out").mkdir()
    timeout = args.timeout or bound + 5
    start = time.monotonic()
    job = subprocess.Popen(command(args, "out"), cwd=d, env=env(args.startup_timeout), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    killed_at, pid, first_at = None, None, None
    while job.poll() is None and killed_at is None:
        now = time.monotonic() - start
        if first_at is None and first_result(d):
            first_at = now
        if pid is None:
            pid = rank_pid(job.pid, rank)
        due = kill_at + first_at if args.after_first_result and first_at is not None else kill_at
        if pid is not None and now >= due and (first_at is not None or not args.after_first_result):
            try:
                os.kill(pid, signal.SIGKILL)
                killed_at = now
            except ProcessLookupError:
                break
        else:
            time.sleep(0.005)
    hung_in = None
    try:
        stdout, stderr = job.communicate(timeout=max(1.0, timeout - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        hung_in = stacks(job.pid, d)
        # The job's own processes, by pid: mpirun's session, and its shells and ranks should one have left it.
        mine = [g for c in children(job.pid) for g in [c, *children(c)]]
        os.killpg(job.pid, signal.SIGKILL)
        for pid in mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        stdout, stderr = job.communicate()
    wall = time.monotonic() - start
    (d / "stdout.txt").write_text(stdout)
    (d / "stderr.txt").write_text(stderr)
    rc = job.returncode
    failures = []
    report = None
    # Killed before every rank was past MPI_Init and the farm's setup: the startup's bound ends every living rank with
    # status 4 and its message (pfarm::mpi::guard_startup), the job having computed nothing.
    startup_ended = not hung_in and not stdout.strip() and STARTUP_LOST in stderr
    # Killed inside MPI_Init, where pfarm has not begun: Open MPI may end the living ranks itself (MPI_Init fails, the
    # dead peer unreachable; MPI_ERRORS_ARE_FATAL), every living rank with a non-zero status, the job computing nothing.
    init_failed = not hung_in and not stdout.strip() and not startup_ended and INIT_FAILED in stderr
    if hung_in:
        failures.append(f"hung: still running after {timeout:.0f} s, rank 0 in {hung_in} (stacks.txt)")
    elif startup_ended or init_failed:
        pass
    elif stdout.strip():
        try:
            report = json.loads(stdout)
        except ValueError:
            failures.append("no JSON report on standard output")
    else:
        failures.append("no report on standard output")
    lost = report["lost_ranks"] if report else None
    status = {}
    for r in range(RANKS):
        f = d / f"status.{r}"
        status[r] = int(f.read_text()) if f.exists() else None
    if report is not None:
        # A rank that died after the farm's outcome is in no report; MPI_Finalize then waits for it, and each living
        # rank ends after pfarm's bound with status 3, saying so (docs/reliability.md "A lost worker", limits).
        want = 3 if lost or "a rank was lost after the farm" in stderr else 0
        if lost not in ([rank], []):
            failures.append(f"lost ranks {lost} (killed: {rank})")
        if killed_at is None and lost:
            failures.append(f"lost ranks {lost} but no rank was killed")
        living = [r for r in range(RANKS) if r != rank or killed_at is None]
        wrong = {r: status[r] for r in living if status[r] != want}
        if wrong:
            failures.append(f"exit status of living ranks {wrong} (want {want})")
        if rc != 0:
            failures.append(f"mpirun exited {rc}")
    if startup_ended:
        wrong = {r: status[r] for r in range(RANKS) if r != rank and status[r] != 4}
        if wrong:
            failures.append(f"ended by the startup's bound, but exit status of living ranks {wrong} (want 4)")
        same = 0
    elif init_failed:
        wrong = {r: status[r] for r in range(RANKS) if r != rank and not status[r]}
        if wrong:
            failures.append(f"MPI_Init failed, but exit status of living ranks {wrong} (want non-zero)")
        same = 0
    else:
        bad, same = compare(ref / "out", d / "out")
        failures += bad[:5] + ([f"... {len(bad) - 5} more"] if len(bad) > 5 else [])
    makespan = report["makespan"] if report else float("nan")
    if makespan > bound:
        failures.append(f"makespan {makespan:.2f} s over the bound {bound:.2f} s")
    if args.app == "mandelbrot":
        first_at = 0.0  # nothing is written before the end: no phase "before the first result"
    before_first = killed_at is not None and (first_at is None or killed_at < first_at)
    where = phase(report, killed_at, before_first, hung_in, startup_ended, init_failed)
    if not failures:
        shutil.rmtree(d)
    return dict(run=i, rank=rank, kill_at=kill_at, killed_at=killed_at, first_at=first_at, rc=rc, status=status,
                hung=bool(hung_in), hung_in=hung_in, lost=lost, wall=wall, makespan=makespan, same=same, phase=where,
                failures=failures,
                stderr_tail=[l for l in stderr.strip().splitlines() if "PMIX ERROR" not in l][-3:] if failures else [])


def main():
    sys.stdout.reconfigure(line_buffering=True)
    args = parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ref, ref_wall, ref_first, ref_report, e_ref, n_files = reference(args, work)
    ref_makespan = ref_report["makespan"]
    print(f"kill_calcium: {RANKS} ranks, {' '.join(command(args, 'out')[5 + len(WRAP):])}")
    print(f"reference: wall {ref_wall:.2f} s, first experiment file at {ref_first:.2f} s, makespan {ref_makespan:.3f} s, "
          f"longest chunk E = {e_ref:.3f} s, {n_files} output files")
    per_rank = bounds(ref_report, e_ref, args.slack)
    for q, (b, factor, e) in per_rank.items():
        print(f"makespan bound, rank {q} killed: {factor:.3g} x {ref_makespan:.3f} + 2 x (4 x {e:.3f} + {args.slack:g}) = "
              f"{b:.2f} s")
    window = ref_wall - ref_first if args.after_first_result else ref_wall
    # pfarm-mandelbrot: from when the reference's farm started (its wall time less its makespan: MPI_Init and the
    # setup are over) to its end.
    start = ref_wall - ref_makespan if args.app == "mandelbrot" else 0.0
    print(f"kills: rank uniform in 1..{RANKS - 1}, time uniform in [{start:.2f}, {window:.2f}) s after "
          + ("the run's first experiment file (the reference's wall time after its own)" if args.after_first_result
             else "mpirun starts (the reference's wall time" + (", from its farm's start)" if start else ")"))
          + f", seed {args.seed}")
    rng = random.Random(args.seed)
    results = []
    for i in range(args.runs):
        rank, kill_at = rng.randint(1, RANKS - 1), rng.uniform(start, window)
        r = one_run(args, work, i, rank, kill_at, ref, per_rank[rank][0])
        results.append(r)
        killed = f"{r['killed_at']:.2f}" if r["killed_at"] is not None else "-"
        first = f"{r['first_at']:.2f}" if r["first_at"] is not None else "-"
        print(f"run {i:3d}: rank {rank} killed at {killed:>5} s (first result {first:>5} s; {r['phase']}) mpirun {r['rc']} "
              f"rank statuses {[r['status'][k] for k in range(RANKS)]} "
              f"lost {r['lost']} makespan {r['makespan']:.2f} s wall {r['wall']:.2f} s "
              f"files {r['same']}/{n_files} same: " + ("ok" if not r["failures"] else "FAIL " + "; ".join(r["failures"])),
              flush=True)
        for line in r["stderr_tail"]:
            print(f"          stderr: {line}")
    print()
    print("| phase of the kill | runs | passed | living ranks exit 3 | exit 0 | hung | failed | makespan min / max (s) | worst makespan / bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    by_phase = collections.defaultdict(list)
    for r in results:
        by_phase[r["phase"]].append(r)
    for name in sorted(by_phase, key=PHASES.index):
        rs = by_phase[name]
        spans = [r["makespan"] for r in rs if r["makespan"] == r["makespan"]]
        ratio = max((r["makespan"] / per_rank[r["rank"]][0] for r in rs if r["makespan"] == r["makespan"]),
                    default=float("nan"))
        span_text = f"{min(spans):.2f} / {max(spans):.2f}" if spans else "-"
        ratio_text = f"{ratio:.2f}" if spans else "-"
        print(f"| {name} | {len(rs)} | {sum(not r['failures'] for r in rs)} | {sum(r['status'][0] == 3 for r in rs)} | "
              f"{sum(r['status'][0] == 0 for r in rs)} | {sum(r['hung'] for r in rs)} | {sum(bool(r['failures']) for r in rs)} | "
              f"{span_text} | {ratio_text} |")
    hung = [r for r in results if r["hung"]]
    if hung:
        print("\nhung: " + "; ".join(f"run {r['run']} (killed at {r['killed_at']:.2f} s) rank 0 in {r['hung_in']}"
                                      for r in hung))
    failed = [r for r in results if r["failures"]]
    in_init = by_phase.get("before MPI_Init completed", [])
    before_farm = by_phase.get("before the farm began", [])
    running = [r for r in results if r["phase"] not in ("before MPI_Init completed", "before the farm began")]
    print(f"\nkills before MPI_Init completed: {len(in_init)}, {sum(r['hung'] for r in in_init)} left hanging (the "
          f"startup's bound off: Open MPI waits in MPI_Init), {sum(not r['hung'] for r in in_init)} ended by Open MPI "
          f"(its MPI_Init failed on the living ranks, the dead one unreachable; status non-zero, nothing computed)")
    print(f"kills before the farm began, ended by the startup's bound (every living rank status 4, nothing computed): "
          f"{len(before_farm)}, {sum(not r['failures'] for r in before_farm)} as expected")
    print(f"kills once the farm had begun (the farm, or after the rank left it): {len(running)}, "
          f"{sum(not r['failures'] for r in running)} passed every check")
    print(f"\n{len(results) - len(failed)}/{len(results)} runs passed every check; reference makespan "
          f"{ref_makespan:.3f} s; outputs kept under {work} for failed runs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
