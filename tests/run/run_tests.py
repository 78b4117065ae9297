#!/usr/bin/env python3
"""pfarm-run under mpiexec (docs/run.md), one scenario per call:

  run_tests.py farm|kill|halt|hierarchical|jobs|lines|lost|lost_hierarchical WORKDIR PFARM_RUN LAUNCHER... --

farm  200 commands of random durations on 4 ranks, some failing, some killed by a signal, some failing once then
      succeeding on their retry, some timing out: every command runs exactly once per attempt, on the rank the job
      log names, with PFARM_TASK, PFARM_RANK and PFARM_ATTEMPT right; each exit status, output file and job log line
      right; the JSON counts right.
kill  the whole job (mpiexec and every rank) is killed with SIGKILL part-way, while every worker is inside a command;
      the commands it was running die with it (the ranks' guards); a rerun with the journal runs no command that had
      succeeded (each appends a line to a marker file: counted) nor a failed one, a third run with --retry-failed
      runs the failed ones only, and its job log covers every command.
halt  --halt-on-error: the first failure stops every rank from starting commands; the commands not started are
      logged as not run, and a rerun with the journal runs exactly them.
hierarchical  --farmer hierarchical --masters 2 --farmer-computes on 5 ranks: 60 commands of 20 ms, each run exactly
      once, on the rank the job log names; every rank ran some (the supermaster and the masters compute too).
jobs  --jobs 3: each command writes its start and end times; on every rank that runs commands, at most 3 ran at
      once and 3 did at some moment (the maximum overlap of the intervals, not a timing threshold), each in its own
      slot; every command ran exactly once per attempt (some fail once and run again with --retries 2); the same
      with --farmer decentralised, --farmer stealing and on one rank.
lines  --line-buffer: each command prints a start line, then waits for a file that the test creates only once it has
      read the start lines on pfarm-run's standard output (so they came while the commands ran), then an end line:
      flat on 3 ranks, with -j 2, rank 0's own command (--farmer-computes), the hierarchical farmer, and -k --tag
      (the second command's line is held until the first has ended, then printed in order).
lost  a worker rank lost (Open MPI's recovery mode, --on-worker-loss continue=1): rank 2's pfarm-run process is
      SIGKILLed by its third command; the run ends on the living ranks, with every command's output printed exactly
      once, every command logged once as succeeded, and the JSON naming rank 2 in lost_ranks.
lost_hierarchical  the same with the hierarchical farmer on 6 ranks, 2 masters (groups {1, 2, 3} and {4, 5}): rank 3,
      a worker of group 0, is lost, and its master hands its commands to the group's other worker.
"""
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict

mode, work, pfarm_run = sys.argv[1], sys.argv[2], sys.argv[3]
launcher = sys.argv[4:sys.argv.index("--")]
os.makedirs(work, exist_ok=True)
for name in os.listdir(work):  # a fresh folder (the test may run again)
    subprocess.run(["rm", "-rf", os.path.join(work, name)], check=True)


def path(name):
    return os.path.join(work, name)


def fail(message):
    print(f"run_tests.py {mode}: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def pfarm(args, expect_code, ranks=4):
    """Runs pfarm-run on `ranks` ranks (--json): its JSON report."""
    cmd = launcher[:]
    cmd[cmd.index("-n") + 1 if "-n" in cmd else cmd.index("-np") + 1] = str(ranks)
    started = time.time()
    p = subprocess.run(cmd + [pfarm_run, "--json", "--progress", "quiet"] + args, capture_output=True, text=True)
    took = time.time() - started
    check(p.returncode == expect_code,
          f"pfarm-run {' '.join(args)}: exit {p.returncode}, expected {expect_code}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    report = json.loads(p.stdout[p.stdout.index("{"):p.stdout.rindex("}") + 1])
    summary = [line for line in p.stderr.splitlines() if line.startswith("pfarm-run: ")]
    print(f"run_tests.py {mode}: {ranks} ranks, {took:.1f} s: {summary[0] if summary else '(no summary)'}")
    return report


def read_log(name):
    with open(path(name)) as f:
        lines = f.read().splitlines()
    check(lines[0] == "task\trank\thost\tstart\tend\truntime\tattempts\texit\tsignal\tstatus\tsource\tcommand",
          f"{name}: header {lines[0]!r}")
    rows = [dict(zip(lines[0].split("\t"), line.split("\t", 11))) for line in lines[1:]]
    tasks = Counter(int(r["task"]) for r in rows)
    check(all(n == 1 for n in tasks.values()), f"{name}: tasks logged twice: {[t for t, n in tasks.items() if n > 1]}")
    return {int(r["task"]): r for r in rows}


def write_commands(commands):
    with open(path("commands"), "w") as f:
        f.write("# pfarm-run test commands, one per line\n\n")
        for c in commands:
            f.write(c + "\n")


def marker_lines():
    with open(path("marker")) as f:
        return [line.split() for line in f.read().splitlines()]


def scenario_farm():
    rng = random.Random(16)
    n = 200
    kinds = ["timeout"] * 3 + ["fail"] * 20 + ["flaky"] * 10 + ["signal"] * 6
    kinds += ["ok"] * (n - len(kinds))
    rng.shuffle(kinds)
    marker, commands, expected = path("marker"), [], {}
    for i, kind in enumerate(kinds):
        start = f'echo "{i} $PFARM_TASK $PFARM_ATTEMPT $PFARM_RANK" >> {marker}; echo out {i}; echo err {i} >&2; sleep {rng.uniform(0, 0.02):.3f}'
        code = rng.randint(1, 9)
        tail = {"ok": "true", "fail": f"exit {code}", "flaky": '[ "$PFARM_ATTEMPT" -ge 2 ] || exit 7',
                "timeout": "sleep 30", "signal": "kill -s KILL $$"}[kind]
        commands.append(f"{start}; {tail}")
        expected[i] = {"ok": ("ok", 1, 0, 0), "fail": ("failed", 2, code, 0), "flaky": ("ok", 2, 0, 0),
                       "timeout": ("timeout", 2, -1, 15), "signal": ("failed", 2, -1, 9)}[kind]
    write_commands(commands)
    failing = sum(1 for kind in kinds if kind in ("fail", "signal", "timeout"))  # GNU parallel's exit status
    report = pfarm(["--output", path("out"), "--joblog-full", path("joblog"), "--timeout", "1.5", "--retries", "2",
                    path("commands")], failing)
    log = read_log("joblog")
    check(sorted(log) == list(range(n)), f"the job log has {len(log)} commands, expected {n}")
    attempts = defaultdict(list)
    for i, task, attempt, rank in marker_lines():
        check(i == task, f"command {i} ran with PFARM_TASK={task}")
        check(rank == log[int(i)]["rank"], f"command {i} ran on rank {rank}; the job log says {log[int(i)]['rank']}")
        attempts[int(i)].append(int(attempt))
    for i in range(n):
        status, tries, code, sig = expected[i]
        row = log[i]
        got = (row["status"], int(row["attempts"]), int(row["exit"]), int(row["signal"]))
        check(got == (status, tries, code, sig), f"command {i}: logged {got}, expected {(status, tries, code, sig)}")
        check(sorted(attempts[i]) == list(range(1, tries + 1)),
              f"command {i}: attempts {sorted(attempts[i])} ran, expected 1..{tries} once each")
        check(row["command"] == commands[i] and row["source"] == "run" and row["host"] and int(row["rank"]) in (1, 2, 3),
              f"command {i}: job log line {row}")
        check(float(row["end"]) >= float(row["start"]), f"command {i}: ends before it starts")
        for stream in ("out", "err"):
            with open(path(f"out/task_{i:06d}.{stream}")) as f:
                text = f.read()
            check(text == f"{stream} {i}\n", f"command {i}: its .{stream} file holds {text!r}")
    counts = Counter(e[0] for e in expected.values())
    check((report["succeeded"], report["failed"], report["timed_out"], report["not_run"], report["commands"]) ==
          (counts["ok"], counts["failed"], counts["timeout"], 0, n), f"JSON counts {report}")
    check(sum(report["tasks_per_rank"]) == n and report["technique"] == "fss", f"JSON report {report}")
    print(f"run_tests.py farm: {n} commands ({counts['ok']} ok, {counts['failed']} failed, {counts['timeout']} timed "
          f"out), {sum(len(a) for a in attempts.values())} attempts, each once; per rank {report['tasks_per_rank']}")


def job_processes(root):
    """mpiexec's pid and its children's (the ranks)."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == root:
            children.append(int(entry))
    return children


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def scenario_kill():
    rng = random.Random(7)
    n, k = 60, 30  # commands 0..k-1 run; k.. wait for a gate the first run never opens
    marker, gate, fixed = path("marker"), path("gate"), path("fixed")
    failing = set(rng.sample(range(k), 4))
    commands = []
    for i in range(n):
        if i >= k:
            commands.append(f'echo "wait {i} $PFARM_RANK $$" >> {marker}; while [ ! -e {gate} ]; do sleep 0.02; done; '
                            f'echo "ok {i}" >> {marker}')
        elif i in failing:
            commands.append(f'sleep {rng.uniform(0.01, 0.1):.3f}; if [ -e {fixed} ]; then echo "ok {i}" >> {marker}; '
                            f'else echo "fail {i}" >> {marker}; exit 3; fi')
        else:
            commands.append(f'sleep {rng.uniform(0.01, 0.1):.3f}; echo "ok {i}" >> {marker}')
    write_commands(commands)
    open(marker, "w").close()
    args = ["--journal", path("journal"), "--quiet", "--technique", "gss", path("commands")]
    cmd = launcher + [pfarm_run] + args
    job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while True:  # until commands 0..k-1 have ended and every worker is inside a waiting command
        lines = marker_lines()
        done = sum(1 for line in lines if line[0] in ("ok", "fail"))
        waiting = {line[2] for line in lines if line[0] == "wait"}
        if done == k and len(waiting) == 3:
            break
        check(job.poll() is None, f"the job ended (exit {job.returncode}) before it could be killed")
        check(time.time() < deadline, f"no kill point within 60 s: {done} of {k} done, workers waiting {waiting}")
        time.sleep(0.05)
    time.sleep(0.3)
    victims = job_processes(job.pid) + [job.pid]
    for pid in victims:  # the whole job at once: mpiexec and every rank
        os.kill(pid, signal.SIGKILL)
    job.wait()
    waiting_pids = [int(line[3]) for line in marker_lines() if line[0] == "wait"]
    for pid in victims + waiting_pids:
        for _ in range(250):
            if not running(pid):
                break
            time.sleep(0.02)
        check(not running(pid), f"process {pid} outlived the killed job by 5 s")
    side = [f for f in os.listdir(work) if f.startswith("journal.rank-")]
    journal_bytes = os.path.getsize(path("journal"))
    print(f"run_tests.py kill: killed {len(victims)} processes with {k} commands done; the journal held {journal_bytes} "
          f"bytes, the ranks' records files {sorted(side)}; the {len(waiting_pids)} commands running died with them")

    open(gate, "w").close()  # a command that survived would now finish and count twice
    time.sleep(0.2)
    report = pfarm(["--journal", path("journal"), "--joblog-full", path("joblog2"), "--quiet", path("commands")],
                   len(failing))
    check(report["from_journal"] == k and sum(report["tasks_per_rank"]) == n - k,
          f"rerun: {report['from_journal']} commands from the journal, {sum(report['tasks_per_rank'])} run; expected {k} and {n - k}")
    check(report["failed"] == len(failing) and report["succeeded"] == n - len(failing), f"rerun counts {report}")
    log = read_log("joblog2")
    check(sorted(log) == list(range(n)), "rerun: the job log misses commands")
    check(all(log[i]["source"] == ("journal" if i < k else "run") for i in range(n)), "rerun: job log sources")
    runs = Counter((line[0], int(line[1])) for line in marker_lines() if line[0] in ("ok", "fail"))
    twice = [key for key, count in runs.items() if count > 1]
    check(not twice, f"commands that ran twice: {twice}")

    open(fixed, "w").close()
    report = pfarm(["--journal", path("journal"), "--retry-failed", "--joblog-full", path("joblog3"), "--quiet",
                    path("commands")], 0)
    check(report["from_journal"] == n - len(failing) and sum(report["tasks_per_rank"]) == len(failing),
          f"--retry-failed: {report['from_journal']} from the journal, {sum(report['tasks_per_rank'])} run")
    log = read_log("joblog3")
    check(sorted(log) == list(range(n)) and all(r["status"] == "ok" for r in log.values()),
          "--retry-failed: the final job log does not show every command succeeded")
    runs = Counter((line[0], int(line[1])) for line in marker_lines() if line[0] in ("ok", "fail"))
    check(all(runs[("ok", i)] == 1 for i in range(n)), "a command succeeded more than once, or never")
    check(all(runs[("fail", i)] == (1 if i in failing else 0) for i in range(n)), "a failed command ran again without --retry-failed")
    leftovers = [f for f in os.listdir(work) if f.startswith("journal.")]
    check(not leftovers, f"left beside the journal: {leftovers}")
    print(f"run_tests.py kill: every one of the {n} commands succeeded exactly once over the three runs "
          f"({len(failing)} failed once first, then ran again with --retry-failed)")


def scenario_halt():
    n, bad = 40, 4
    marker = path("marker")
    commands = [f'echo "{i}" >> {marker}; sleep 0.05' + ("; exit 5" if i == bad else "") for i in range(n)]
    write_commands(commands)
    open(marker, "w").close()
    common = ["--journal", path("journal"), "--quiet", "--technique", "ss", path("commands")]
    report = pfarm(["--halt-on-error", "--joblog-full", path("joblog")] + common, 5, ranks=3)  # the failed one's status
    log = read_log("joblog")
    started = {int(line[0]) for line in marker_lines()}
    not_run = {i for i, r in log.items() if r["status"] == "not-run"}
    check(sorted(log) == list(range(n)), "halt: the job log misses commands")
    check(report["halted"] and report["failed"] == 1 and log[bad]["status"] == "failed", f"halt: {report}")
    check(not_run == set(range(n)) - started, "halt: the commands logged not run are not those that did not start")
    check(len(not_run) >= n // 2, f"halt: only {len(not_run)} of {n} commands were not started after the failure")
    report = pfarm(common, 1, ranks=3)
    runs = Counter(int(line[0]) for line in marker_lines())
    check(all(runs[i] == 1 for i in range(n)), f"halt: after the rerun, runs per command {dict(runs)}")
    check(report["from_journal"] == n - len(not_run) and report["failed"] == 1, f"halt rerun: {report}")
    print(f"run_tests.py halt: {len(not_run)} of {n} commands not started after the failure; the rerun ran exactly those")


def scenario_hierarchical():
    n, ranks = 60, 5
    marker = path("marker")
    commands = [f'echo "{i} $PFARM_TASK $PFARM_ATTEMPT $PFARM_RANK" >> {marker}; sleep 0.02' for i in range(n)]
    write_commands(commands)
    report = pfarm(["--farmer", "hierarchical", "--masters", "2", "--farmer-computes", "--joblog-full", path("joblog"),
                    "--quiet", path("commands")], 0, ranks)
    log = read_log("joblog")
    check(sorted(log) == list(range(n)), f"the job log has {len(log)} commands, expected {n}")
    ran = Counter()
    for i, task, attempt, rank in marker_lines():
        check(i == task and attempt == "1", f"command {i} ran with PFARM_TASK={task}, PFARM_ATTEMPT={attempt}")
        check(rank == log[int(i)]["rank"], f"command {i} ran on rank {rank}; the job log says {log[int(i)]['rank']}")
        ran[int(i)] += 1
    check(all(ran[i] == 1 for i in range(n)), f"commands not run exactly once: {[i for i in range(n) if ran[i] != 1]}")
    per_rank = Counter(int(log[i]["rank"]) for i in range(n))
    check(all(per_rank[r] > 0 for r in range(ranks)), f"a rank ran no command: {dict(per_rank)}")
    check(report["succeeded"] == n and sum(report["tasks_per_rank"]) == n, f"JSON report {report}")
    print(f"run_tests.py hierarchical: {n} commands, each once; per rank {report['tasks_per_rank']}")


def scenario_jobs():
    n, per_rank, sleep = 36, 3, 0.6
    marker, flags = path("marker"), path("flags")
    os.makedirs(flags)
    flaky = set(range(0, n, 7))
    commands = []
    for i in range(n):
        again = f"; if [ ! -e {flags}/{i} ]; then touch {flags}/{i}; exit 3; fi" if i in flaky else ""
        commands.append(f'echo "S {i} $PFARM_TASK $PFARM_ATTEMPT $PFARM_RANK $PARALLEL_JOBSLOT $(date +%s.%N)" >> {marker}; '
                        f'sleep {sleep}; echo "E {i} $PFARM_TASK $PFARM_ATTEMPT $PFARM_RANK $PARALLEL_JOBSLOT $(date +%s.%N)" '
                        f'>> {marker}{again}')
    write_commands(commands)

    def check_run(label, args, ranks, expect_slots):
        for f in os.listdir(flags):
            os.remove(os.path.join(flags, f))
        open(marker, "w").close()
        report = pfarm(args + ["-j", str(per_rank), "--retries", "2", "--joblog-full", path("joblog"), "--quiet",
                               path("commands")], 0, ranks)
        log = read_log("joblog")
        check(sorted(log) == list(range(n)), f"{label}: the job log has {len(log)} commands, expected {n}")
        starts, ends = {}, {}
        for kind, i, task, attempt, rank, slot, t in marker_lines():
            key = (int(i), int(attempt))
            check(i == task, f"{label}: command {i} ran with PFARM_TASK={task}")
            check(key not in (starts if kind == "S" else ends), f"{label}: command {i} attempt {attempt} ran twice")
            (starts if kind == "S" else ends)[key] = (float(t), rank, int(slot))
            check(rank == log[int(i)]["rank"], f"{label}: command {i} ran on rank {rank}; the job log says {log[int(i)]['rank']}")
        expected = {(i, a) for i in range(n) for a in ((1, 2) if i in flaky else (1,))}
        check(set(starts) == expected and set(ends) == expected, f"{label}: attempts run: {sorted(set(starts) ^ expected)}")
        check(all(log[i]["status"] == "ok" and int(log[i]["attempts"]) == (2 if i in flaky else 1) for i in range(n)),
              f"{label}: job log statuses or attempts wrong")
        overlap = {}
        for rank in {r for _, r, _ in starts.values()}:
            events = sorted([(starts[k][0], 1, starts[k][2]) for k in starts if starts[k][1] == rank] +
                            [(ends[k][0], -1, ends[k][2]) for k in ends if ends[k][1] == rank])
            now, most, busy = 0, 0, set()
            for _, step, slot in events:  # an end before a start at the same instant
                now += step
                most = max(most, now)
                if step == 1:
                    check(slot not in busy, f"{label}: rank {rank} ran two commands at once in slot {slot}")
                    busy.add(slot)
                else:
                    busy.discard(slot)
            overlap[rank] = most
        check(all(v == per_rank for v in overlap.values()), f"{label}: commands at once per rank {overlap}, expected {per_rank}")
        slots = {s for _, _, s in starts.values()}
        check(slots <= set(range(1, expect_slots + 1)), f"{label}: slots {sorted(slots)}, expected 1 to {expect_slots}")
        check(report["succeeded"] == n, f"{label}: JSON report {report}")
        print(f"run_tests.py jobs: {label}: at most and at some moment {per_rank} at once on each rank {overlap}; "
              f"{len(starts)} attempts, each once; slots {sorted(slots)}")

    check_run("flat, 3 ranks", ["--technique", "fss"], 3, 2 * per_rank)
    check_run("decentralised, 3 ranks", ["--farmer", "decentralised", "--technique", "gss"], 3, 3 * per_rank)
    check_run("stealing, 3 ranks", ["--farmer", "stealing", "--technique", "gss"], 3, 3 * per_rank)
    check_run("one rank", [], 1, per_rank)


def scenario_lost(ranks=4, victim=2, extra=()):
    n = 40
    flags = path("flags")
    os.makedirs(flags)
    # The victim: rank `victim`'s third command kills its pfarm-run process (the ancestor of the command's shell named
    # pfarm-run, found through /proc) before it prints anything.
    kill = (f'if [ "$PFARM_RANK" = {victim} ]; then c=$(cat {flags}/count 2>/dev/null || echo 0); c=$((c+1)); '
            f'echo $c > {flags}/count; if [ $c = 3 ]; then p=$$; '
            f'while [ "$p" -gt 1 ] && [ "$(cat /proc/$p/comm)" != pfarm-run ]; do p=$(cut -d" " -f4 /proc/$p/stat); done; '
            f'kill -9 $p; sleep 5; fi; fi')
    write_commands([f"{kill}; sleep 0.05; echo out {i}" for i in range(n)])
    cmd = launcher[:]
    cmd[cmd.index("-n") + 1 if "-n" in cmd else cmd.index("-np") + 1] = str(ranks)
    env = dict(os.environ, OMPI_MCA_orte_enable_recovery="1")
    try:
        p = subprocess.run(cmd + [pfarm_run, "--json", "--progress", "quiet", "--technique", "ss", "--on-worker-loss",
                                  "continue=1", *extra, "--joblog-full", path("joblog"), path("commands")],
                           capture_output=True, text=True, env=env, timeout=90)
    except subprocess.TimeoutExpired:
        fail("pfarm-run did not end within 90 s of a lost rank")
    count = os.path.join(flags, "count")
    check(os.path.exists(count) and int(open(count).read().split()[0]) >= 3,
          f"rank {victim} never ran its third command: nothing was killed")
    outputs = Counter(line for line in p.stdout.splitlines() if line.startswith("out "))
    check(all(outputs[f"out {i}"] == 1 for i in range(n)) and len(outputs) == n,
          f"outputs not printed exactly once: {dict(outputs)}\nstderr: {p.stderr}")
    report = json.loads(p.stdout[p.stdout.index("{"):p.stdout.rindex("}") + 1])
    check(report["lost_ranks"] == [victim], f"lost_ranks {report['lost_ranks']}, expected [{victim}]")
    check(report["succeeded"] == n and report["exit_status"] == 0, f"JSON report {report}")
    log = read_log("joblog")
    check(sorted(log) == list(range(n)) and all(r["status"] == "ok" for r in log.values()),
          f"job log: {len(log)} rows, statuses {Counter(r['status'] for r in log.values())}")
    print(f"run_tests.py lost: rank {victim} lost; {n} commands, each output once, each logged once as ok")


def scenario_lines():
    go = path("go")

    def live(label, args, ranks, values, wanted, check_held=None):
        """Runs pfarm-run --line-buffer on `values`; creates `go` once `wanted` start lines have come, after
        check_held(lines) if given; returns the lines of its standard output."""
        if os.path.exists(go):
            os.remove(go)
        cmd = launcher[:]
        cmd[cmd.index("-n") + 1 if "-n" in cmd else cmd.index("-np") + 1] = str(ranks)
        command = (f'echo "start {{}} $PFARM_RANK"; touch {path("started")}-{{}}; i=0; while [ ! -e {go} ]; do '
                   f'i=$((i+1)); if [ $i -gt 800 ]; then echo "end {{}} no-go"; exit 1; fi; sleep 0.05; done; '
                   f'echo "end {{}} go"')
        with open(path("stderr"), "w") as err:
            p = subprocess.Popen(cmd + [pfarm_run, "--progress", "quiet", "--line-buffer"] + args + [command, ":::"] + values,
                                 stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True)
            lines = queue.Queue()
            reader = threading.Thread(target=lambda: [lines.put(line) for line in p.stdout] + [lines.put(None)], daemon=True)
            reader.start()
            seen, started, deadline = [], 0, time.time() + 60
            while started < wanted:
                try:
                    line = lines.get(timeout=max(deadline - time.time(), 0.01))
                except queue.Empty:
                    p.kill()
                    fail(f"{label}: {started} of {wanted} start lines within 60 s while the commands ran: {seen}")
                check(line is not None, f"{label}: pfarm-run ended before its commands could: {seen}")
                seen.append(line.rstrip("\n"))
                check(" end " not in line and not line.startswith("end "), f"{label}: an end line before {go} was made: {seen}")
                started += 1
            if check_held:
                check_held(seen, lines)
            open(go, "w").close()
            while (line := lines.get(timeout=120)) is not None:
                seen.append(line.rstrip("\n"))
            code = p.wait(timeout=60)
        check(code == 0, f"{label}: exit {code}: {open(path('stderr')).read()}")
        ends = [line for line in seen if "end " in line]
        check(len(ends) == len(values) and all(line.endswith(" go") for line in ends),
              f"{label}: end lines {ends}, expected {len(values)} after {go}")
        print(f"run_tests.py lines: {label}: {wanted} start line(s) came while the commands ran; {len(seen)} lines")
        return seen

    def ranks_of(seen):
        return {line.split()[-1] for line in seen if "start " in line}

    seen = live("flat, 3 ranks", [], 3, ["a", "b"], 2)
    check(ranks_of(seen) == {"1", "2"}, f"flat: start lines from ranks {ranks_of(seen)}")
    seen = live("-j 2, 3 ranks", ["-j", "2"], 3, ["a", "b", "c", "d"], 4)
    check(ranks_of(seen) == {"1", "2"}, f"-j 2: start lines from ranks {ranks_of(seen)}")
    seen = live("--farmer-computes, 2 ranks", ["--farmer-computes"], 2, ["a"], 1)
    check(ranks_of(seen) == {"0"}, f"--farmer-computes: the command ran on ranks {ranks_of(seen)}, expected rank 0")
    live("hierarchical, 5 ranks", ["--farmer", "hierarchical", "--masters", "2"], 5, ["a"], 1)

    def held(seen, lines):  # -k: b runs beside a, but its start line waits until a has ended
        deadline = time.time() + 60
        while not os.path.exists(path("started") + "-b"):
            check(time.time() < deadline, "-k: command b did not start beside a")
            time.sleep(0.05)
        time.sleep(1.0)  # b's line has had time to reach rank 0: it must be held there
        check(lines.empty(), f"-k: a line of command b was printed before command a ended: {lines.queue}")
    seen = live("-k --tag, 3 ranks", ["-k", "--tag"], 3, ["a", "b"], 1, held)
    check([line.split(" ")[0] for line in seen] == ["a\tstart", "a\tend", "b\tstart", "b\tend"],
          f"-k --tag: lines {seen}, expected a's then b's, tagged")


{"farm": scenario_farm, "kill": scenario_kill, "halt": scenario_halt, "hierarchical": scenario_hierarchical,
 "jobs": scenario_jobs, "lines": scenario_lines, "lost": scenario_lost,
 "lost_hierarchical": lambda: scenario_lost(6, 3, ("--farmer", "hierarchical", "--masters", "2"))}[mode]()
print(f"run_tests.py {mode}: passed")
