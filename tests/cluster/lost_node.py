"""pfarm-cluster run --recovery: mpirun under Open MPI's recovery mode, ended once it waits only for a lost node.

Open MPI 4.1's mpirun under recovery mode (orte_enable_recovery) keeps the job running when a node's daemon (orted)
dies, but it never learns that the ranks of that node have ended: it counts a job done when every rank's end has been
reported by its daemon, and a dead daemon reports nothing (orte/mca/errmgr/default_hnp, state/base), so mpirun waits
for ever once the living ranks have exited. This module runs mpirun with a token in its environment (which the
daemons and ranks inherit), watches the nodes' processes, and when a node that ran a daemon of this run holds none of
its processes any more while no rank of it is left anywhere (only daemons), for GRACE seconds, it ends mpirun with
SIGTERM (its daemons then exit) and says so. Exit status: mpirun's own, or LOST_NODE_STATUS when it was ended so.
"""
import os
import signal
import subprocess
import sys
import time

TOKEN_VAR = "PFARM_CLUSTER_RUN"
LOST_NODE_STATUS = 3
GRACE_S = 3.0
POLL_S = 0.25


def _run_processes(pids, token):
    """(pid, command name) of the processes among pids whose environment holds the run's token."""
    want = f"{TOKEN_VAR}={token}".encode()
    found = []
    for pid in pids:
        try:
            if want not in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
                continue
            found.append((pid, open(f"/proc/{pid}/comm").read().strip()))
        except OSError:
            pass
    return found


def run(argv, env, nodes, node_pids, prog):
    """Runs argv (an mpirun under recovery mode across nodes); nodes: the hostnames, node_pids(host): the pids on
    that node. Returns mpirun's exit status, or LOST_NODE_STATUS when it was ended waiting for a lost node."""
    token = f"{os.getpid()}.{time.monotonic_ns()}"
    p = subprocess.Popen(argv, env=dict(env, **{TOKEN_VAR: token}))

    def forward(sig, _frame):
        try:
            p.send_signal(sig)
        except ProcessLookupError:
            pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    seen, stuck_since, ended = set(), None, None
    try:
        while p.poll() is None:
            mine = {h: _run_processes(node_pids(h), token) for h in nodes}
            seen.update(h for h, procs in mine.items() if any(c == "orted" for _, c in procs))
            lost = sorted(h for h in seen if not mine[h])
            ranks_left = any(c != "orted" for procs in mine.values() for _, c in procs)
            if lost and not ranks_left and p.poll() is None:
                stuck_since = stuck_since or time.monotonic()
                if time.monotonic() - stuck_since >= GRACE_S:
                    ended = lost
                    print(f"{prog}: run: node(s) {', '.join(lost)} lost; every rank on the other nodes has exited and "
                          f"mpirun waits for the lost ranks for ever (Open MPI under recovery mode): ending it",
                          file=sys.stderr, flush=True)
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        p.kill()
                    break
            else:
                stuck_since = None
            time.sleep(POLL_S)
        rc = p.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return LOST_NODE_STATUS if ended else rc
