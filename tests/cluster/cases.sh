#!/usr/bin/env bash
# The cluster tests' cases, each run inside an emulated cluster made by 'pfarm-cluster with' (PFARM_CLUSTER, the
# harness, and PFARM_CLUSTER_NAME set): the same answers across emulated nodes as on one node.
#   cases.sh CASE WORKDIR      programs from the environment: MANDELBROT, CALCIUM, PFARM_RUN, C_API
# Cases: mandelbrot, calcium, hierarchical, decentralised (with the work-stealing farm), c_api, run_mpirun,
# journal_kill, node_kill (flat, hierarchical, decentralised), slurm.
set -euo pipefail
case_name=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cd "$work"

pc() { "$PFARM_CLUSTER" "$@"; }
say() { echo "cluster.$case_name: $*" >&2; }
fail() { echo "cluster.$case_name: FAILED: $*" >&2; exit 1; }
# The single-node reference: plain mpiexec on this machine, outside the emulated nodes.
local_mpi() { local n=$1; shift; mpirun --oversubscribe -np "$n" "$@"; }
json_field() {  # json_field FILE KEY: a field of the JSON object in FILE (text around it skipped)
  python3 - "$1" "$2" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
print(json.loads(t[t.index("{"):t.rindex("}") + 1])[sys.argv[2]])
PY
}
timed() {  # timed LABEL COMMAND...: runs it, prints its wall time
  local t0=$SECONDS label=$1; shift
  "$@"
  say "$label: $((SECONDS - t0)) s"
}

# The rank -> hostname map of an mpirun over HOSTS (what the ranks' gethostname says).
rank_hosts() {
  pc run --host "$1" -- sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' | sort -n
}

mandel_args=(--width 240 --height 160 --max-iterations 800 --quiet --json)

case $case_name in
mandelbrot)
  # The flat farmer across 3 nodes (ranks 0-1 on node0, 2 on node1, 3 on node2): the checksum and the image equal a
  # single-node run's, with a fixed technique and with the adaptive ones.
  local_mpi 4 "$MANDELBROT" "${mandel_args[@]}" --technique gss --output ref.pgm >ref.json
  ref=$(json_field ref.json checksum)
  [ "$(rank_hosts node0:2,node1:1,node2:1 | awk '{print $2}' | sort -u | wc -l)" -eq 3 ] ||
    fail "ranks not on 3 hostnames"
  for t in "gss" "multi" "af" "ss --prefetch --reclaim"; do
    # shellcheck disable=SC2086
    timed "$t" pc run -- "$MANDELBROT" "${mandel_args[@]}" --technique $t --output "c-${t%% *}.pgm" >"c-${t%% *}.json"
    got=$(json_field "c-${t%% *}.json" checksum)
    [ "$got" = "$ref" ] || fail "$t: checksum $got across nodes, $ref on one node"
    cmp -s ref.pgm "c-${t%% *}.pgm" || fail "$t: the image differs from the single-node run's"
    [ "$(json_field "c-${t%% *}.json" ranks)" = 4 ] || fail "$t: not 4 ranks"
  done
  say "checksum $ref and the image identical to one node's for gss, multi, af, ss with prefetch and reclaim"
  # Each node's daemon binds its own ranks as if the cores were its alone: two ranks on two nodes would both be
  # bound to core 0 (a round trip of 8 ms, one core idle). The harness runs them unbound; the quotas divide the
  # cores.
  host_cpus=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
  pc run --host node0:1,node1:1 -- sh -c 'awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status' >cpus.txt
  [ "$(sort -u cpus.txt)" = "$host_cpus" ] ||
    fail "ranks on two nodes may run on CPUs $(sort -u cpus.txt | tr '\n' ' '), not every CPU ($host_cpus)"
  say "ranks on two nodes unbound: CPUs $host_cpus"
  # Under a CPU quota a waiting rank does not spin (skeleton/mpi/src/setup.cpp): the farmer alone on node0 (quota
  # 0.8 of a core, one rank) serving gss's few chunks waits nearly the whole makespan. Sleeping between probes it
  # uses about 0.05 of the makespan in CPU time; spinning (measured with the sleep disabled), 0.73. With ss's 2000
  # requests, serving them alone takes 0.3 to 0.47 of the makespan with the machine's speed: no margin to tell.
  timed "gss, farmer alone" pc run --host node0:1,node1:1,node2:1 -- "$MANDELBROT" --width 2000 --height 800 \
    --max-iterations 800 --quiet --json --verify none --technique gss --output alone.pgm >alone.json
  cpu=$(json_field alone.json farmer_cpu_seconds) span=$(json_field alone.json makespan)
  python3 -c "import sys; sys.exit(0 if $cpu < 0.25 * $span else 1)" ||
    fail "the farmer used $cpu s of CPU in a makespan of $span s: it spins under its node's quota"
  say "the farmer alone under a quota of 0.8 used $cpu s of CPU in $span s"
  # The setup's round trip is the network's (about 25 us here), not a wait for a rank whose quota is spent for the
  # period (up to 80 ms on node2): per worker the least of three ping-pongs (skeleton/mpi/src/setup.cpp).
  rtt=$(json_field alone.json round_trip)
  python3 -c "import sys; sys.exit(0 if 0 < $rtt < 1e-3 else 1)" ||
    fail "the setup measured a round trip of $rtt s across the nodes: a wait for a throttled rank, not the network's"
  say "the setup's round trip across the nodes: $rtt s"
  ;;

calcium)
  # pfarm-calcium across 3 nodes: its whole output folder byte-identical to a one-rank run's.
  args=(--channels 300 --steps 400 --peak-duration 0.002 --voltage-step 10 --experiments 26 --seed 5 --quiet)
  local_mpi 1 "$CALCIUM" --technique static --output ref "${args[@]}" >/dev/null
  for t in multi fss; do
    timed "$t" pc run -- "$CALCIUM" --technique "$t" --output "c-$t" "${args[@]}" >/dev/null
    diff -r ref "c-$t" >/dev/null ||
      fail "$t: output differs from the single-node run's: $(diff -rq ref "c-$t" | head -3)"
  done
  say "output folders identical to a one-rank run's ($(find ref -type f | wc -l) files)"
  ;;

hierarchical)
  # --farmer hierarchical --masters 0: one master per node. 7 ranks, 3 on node0 (the supermaster and a group of
  # two), 2 on node1, 2 on node2: the masters the report names (--json: masters.ranks) must be the lowest rank
  # but 0 of each hostname, one per hostname.
  hosts=node0:3,node1:2,node2:2
  rank_hosts $hosts >ranks.txt
  local_mpi 4 "$MANDELBROT" "${mandel_args[@]}" --technique ss --output ref.pgm >/dev/null
  timed "hierarchical ss" pc run --host $hosts -- "$MANDELBROT" "${mandel_args[@]}" --technique ss \
    --farmer hierarchical --masters 0 --output h.pgm >h.json
  cmp -s ref.pgm h.pgm || fail "the image differs from the single-node run's"
  masters=$(json_field h.json masters |
    python3 -c 'import ast,sys; print(*sorted(ast.literal_eval(sys.stdin.read())["ranks"]))')
  [ "$(echo "$masters" | wc -w)" -eq 3 ] || fail "not 3 masters: ranks $masters"
  expected=$(awk '$1 != 0 && !($2 in seen) {seen[$2] = 1; print $1}' ranks.txt | sort -n | tr '\n' ' ' | sed 's/ $//')
  [ "$masters" = "$expected" ] ||
    fail "masters are ranks $masters; the lowest rank but 0 per hostname is $expected ($(tr '\n' ' ' <ranks.txt))"
  master_hosts=$(for r in $masters; do awk -v r="$r" '$1 == r {print $2}' ranks.txt; done | sort -u | wc -l)
  [ "$master_hosts" -eq 3 ] || fail "the masters are on $master_hosts hostnames, expected 3"
  say "masters ranks $masters, one per hostname ($(tr '\n' ' ' <ranks.txt)); image identical"
  ;;

decentralised)
  # The decentralised farm claims chunks by one-sided atomics on a window over every rank. Over TCP, Open MPI 4.1's
  # osc/rdma cannot make that window (no RDMA transport); osc/pt2pt can (the harness passes --mca osc pt2pt,sm).
  local_mpi 4 "$MANDELBROT" "${mandel_args[@]}" --technique gss --output ref.pgm >ref.json
  for t in gss fss "dgss --weights 1,4,2,1"; do
    # shellcheck disable=SC2086
    timed "$t" pc run -- "$MANDELBROT" "${mandel_args[@]}" --technique $t --farmer decentralised --farmer-computes \
      --output "d-${t%% *}.pgm" >"d-${t%% *}.json"
    cmp -s ref.pgm "d-${t%% *}.pgm" || fail "$t: the image differs from the single-node run's"
    [ "$(json_field "d-${t%% *}.json" checksum)" = "$(json_field ref.json checksum)" ] || fail "$t: checksum differs"
  done
  # The work-stealing farm: every rank's range in the window, steals across nodes (random victims, and the tree).
  for v in random tree; do
    timed "stealing $v" pc run -- "$MANDELBROT" "${mandel_args[@]}" --technique gss --farmer stealing --victims $v \
      --output "s-$v.pgm" >"s-$v.json"
    cmp -s ref.pgm "s-$v.pgm" || fail "stealing $v: the image differs from the single-node run's"
    [ "$(json_field "s-$v.json" checksum)" = "$(json_field ref.json checksum)" ] || fail "stealing $v: checksum differs"
  done
  # Without a component that works over TCP, the run must stop with an error saying what to do, never hang.
  set +e
  timeout 60 "$PFARM_CLUSTER" run -- --mca osc rdma "$MANDELBROT" --width 20 --height 20 --technique gss \
    --farmer decentralised --quiet >rdma.out 2>&1
  rc=$?
  set -e
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "with osc rdma across nodes: exit $rc, expected an error"
  grep -q "MPI_Win_allocate" rdma.out || fail "with osc rdma: no error naming MPI_Win_allocate: $(head -5 rdma.out)"
  say "images identical to one node's for gss, fss, dgss and for stealing (random, tree); osc rdma alone stops with:" \
    "$(grep -m1 MPI_Win_allocate rdma.out)"
  ;;

c_api)
  # The C API's test program (tests/mpi/test_c_api.c) across 3 nodes: it checks its own results.
  timed "c api" pc run -- "$C_API" >c_api.out 2>&1 || fail "$(tail -20 c_api.out)"
  grep -q "c api: ok" c_api.out || fail "no 'c api: ok': $(tail -5 c_api.out)"
  say "$(grep 'c api: ok' c_api.out)"
  ;;

run_mpirun | run_srun)
  # pfarm-run across 3 nodes whose commands are themselves MPI programs (one-rank runs of pfarm-mandelbrot): each
  # command's checksum equals the one computed here, the job log names the host each ran on (its own hostname, as
  # the command printed it), and the commands ran on every node (static: two commands per worker, whatever the
  # timing).
  widths=(16 24 32 40 48 56)
  for w in "${widths[@]}"; do
    local_mpi 1 "$MANDELBROT" --width "$w" --height 30 --max-iterations 200 --quiet --json >"ref-$w.json"
  done
  cmd="$MANDELBROT --width {1} --height 30 --max-iterations 200 --quiet --json > result-{1}.json && hostname"
  if [ "$case_name" = run_mpirun ]; then
    timed "pfarm-run under mpirun" pc run -- "$PFARM_RUN" --technique static --progress quiet --joblog-full log.tsv \
      --output out "$cmd" ::: "${widths[@]}"
  else
    timed "pfarm-run under srun" pc slurm -- srun --mpi=pmix --kill-on-bad-exit=1 -N 3 -n 4 "$PFARM_RUN" \
      --technique static --progress quiet --joblog-full log.tsv --output out "$cmd" ::: "${widths[@]}"
  fi
  for w in "${widths[@]}"; do
    [ "$(json_field "result-$w.json" checksum)" = "$(json_field "ref-$w.json" checksum)" ] ||
      fail "width $w: checksum differs"
  done
  python3 - <<'PY' || exit 1
import csv, os
rows = list(csv.DictReader(open("log.tsv"), delimiter="\t"))
assert len(rows) == 6, f"{len(rows)} job log lines, expected 6"
for r in rows:
    assert r["status"] == "ok", f"task {r['task']}: {r['status']}"
    printed = open(f"out/task_{int(r['task']):06d}.out").read().split()[-1]
    assert printed == r["host"], f"task {r['task']}: the job log says {r['host']}, the command printed {printed}"
hosts = sorted({r["host"] for r in rows})
assert hosts == ["node0", "node1", "node2"], f"commands ran on {hosts}, expected node0, node1 and node2"
print("cluster.run: 6 MPI commands ok, on", ", ".join(f"{h} ({sum(r['host'] == h for r in rows)})" for h in hosts))
PY
  ;;

journal_kill)
  # A node lost: a calcium sweep with --journal across 3 nodes, node2 SIGKILLed (every process on it) once the
  # journal holds some tasks; mpirun ends the job. A rerun with the journal across the 3 nodes (node2 back) computes
  # only what the journal lacks, and the output folder equals an uninterrupted single-node run's.
  args=(--channels 2000 --steps 2000 --peak-duration 0.004 --voltage-step 2 --experiments 240 --trace-stride 20
        --seed 7 --technique ss --quiet)
  timed "reference" local_mpi 3 "$CALCIUM" --output ref "${args[@]}" >/dev/null
  set +e
  pc run -- "$CALCIUM" --output run --journal journal "${args[@]}" >first.out 2>&1 &
  job=$!
  for _ in $(seq 1 1200); do
    size=$(stat -c %s journal 2>/dev/null || echo 0)
    if [ "$size" -gt 32 ] || ! kill -0 $job 2>/dev/null; then break; fi
    sleep 0.05
  done
  kill -0 $job 2>/dev/null || fail "the run ended before node2 could be killed: $(tail -5 first.out)"
  pc kill node2
  wait $job
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "the run went on to exit 0 after node2 was lost"
  say "node2 killed; mpirun exited $rc; journal of $(stat -c %s journal) bytes"
  timed "resume" pc run -- "$CALCIUM" --output run --journal journal --json "${args[@]}" >resume.json
  diff -r ref run >/dev/null || fail "the resumed output differs: $(diff -rq ref run | head -3)"
  python3 - <<'PY'
import json
t = open("resume.json").read()
r = json.loads(t[t.index("{"):t.rindex("}") + 1])
computed, journaled, tasks = sum(r["tasks_per_rank"]), r["journaled"], r["tasks"]
print(f"cluster.journal_kill: resumed: {journaled} tasks from the journal, {computed} computed, {tasks} in all")
assert journaled > 0, "nothing was restored from the journal"
assert computed > 0, "the journal held every task: make the sweep longer"
assert computed + journaled == tasks, "a journaled task was computed again, or a task is missing"
PY
  say "output identical to an uninterrupted single-node run"
  ;;

node_kill)
  # A whole node lost under Open MPI's recovery mode: pfarm-calcium across the 3 nodes, node2 SIGKILLed (its ranks and
  # its orted) 0.5 s after the sweep's first result. The farm must go on without it in the same run: the output
  # folder byte-identical to an uninterrupted run's, the ranks of node2 (from the ranks' own hostname) reported as
  # lost_ranks, every living rank exiting 3. mpirun never learns that node2's ranks ended and waits for them;
  # 'run --recovery' ends it once every other rank has exited, and exits 3 (docs/reliability.md "A lost node").
  # 1. The flat farmer on 4 ranks: 0-1 on node0, 2 on node1, 3 on node2.
  # 2. The hierarchical farmer, one master per node (--masters 0) on node0:3,node1:2,node2:1: rank 5, alone on node2,
  #    is a worker of node1's group (master 3), so node2 holds no master (checked: the report's masters.ranks).
  # 3. The same on node0:3,node1:2,node2:2: node2 holds a whole group, master 5 and its worker 6. Rank 0 presumes the
  #    master lost and hands its chunks to the other masters; lost_ranks names the master, then its worker, which does
  #    not answer rank 0 (docs/reliability.md "In the hierarchical farm").
  args=(--channels 2000 --steps 5000 --peak-duration 0.03 --experiments 120 --trace-stride 10 --technique multi
        --k 8 --json --quiet --on-worker-loss continue=2)
  timed "reference" local_mpi 3 "$CALCIUM" "${args[@]}" --output ref >/dev/null
  # Each rank's shell records its exit status and hostname (mpirun under recovery mode exits 0 whatever its ranks do).
  wrap=(sh -c 'echo "$(hostname)" >host.$OMPI_COMM_WORLD_RANK; "$0" "$@"; s=$?; echo $s >status.$OMPI_COMM_WORLD_RANK; exit $s')
  kill_run() {  # kill_run LABEL LOST HOSTS [ARGS...]: in folder LABEL; LOST: workers (node2 holds workers only) or
    # master (node2 holds a master and its group)
    local label=$1 lost=$2 hosts=$3 t0=$SECONDS rc job killed; shift 3
    mkdir "$label" && cd "$label"
    set +e
    timeout 80 "$PFARM_CLUSTER" run --recovery --host "$hosts" -- "${wrap[@]}" "$CALCIUM" "${args[@]}" "$@" \
      --output run >run.json 2>run.err &
    job=$!
    for _ in $(seq 1 1200); do
      [ -n "$(ls run/experiments 2>/dev/null | head -1)" ] || ! kill -0 $job 2>/dev/null && break
      sleep 0.02
    done
    kill -0 $job 2>/dev/null || fail "$label: the run ended before node2 could be killed: $(tail -5 run.err)"
    sleep 0.5
    pc kill node2 >/dev/null
    say "$label: node2 killed $((SECONDS - t0)) s after mpirun started"
    wait $job
    rc=$?
    set -e
    say "$label: run --recovery exited $rc after $((SECONDS - t0)) s"
    [ $rc -ne 124 ] ||
      fail "$label: the run did not end within 80 s after node2 was lost: $(grep -v 'PMIX ERROR' run.err | tail -5)"
    [ $rc -eq 3 ] || fail "$label: run --recovery exited $rc, expected 3 (mpirun ended once it waited only for" \
      "node2): $(grep -v 'PMIX ERROR' run.err | tail -5)"
    killed=$(grep -lx node2 host.* | sed 's/host\.//' | sort -n | tr '\n' ' ' | sed 's/ $//')
    [ -n "$killed" ] || fail "$label: no rank ran on node2"
    diff -r ../ref run >/dev/null ||
      fail "$label: the output differs from an uninterrupted run's: $(diff -rq ../ref run | head -3)"
    LABEL="$label" KILLED="$killed" LOST="$lost" python3 - <<'PY'
import json, os
label, killed = os.environ["LABEL"], [int(r) for r in os.environ["KILLED"].split()]
t = open("run.json").read()
r = json.loads(t[t.index("{"):t.rindex("}") + 1])
masters = (r.get("masters") or {}).get("ranks", [])
if os.environ["LOST"] == "master":
    named = sorted(set(masters) & set(killed))
    assert named and set(killed) - set(named), f"{label}: node2 held masters {named} of ranks {killed}: not a group"
    expected = named + sorted(set(killed) - set(named))
    assert r["lost_ranks"] == expected, f"{label}: lost_ranks {r['lost_ranks']}, expected node2's master then its workers {expected}"
else:
    assert r["lost_ranks"] == killed, f"{label}: lost_ranks {r['lost_ranks']}, the ranks on node2 were {killed}"
    assert not set(masters) & set(killed), f"{label}: node2 held master(s) {set(masters) & set(killed)}"
status = {k: open(f"status.{k}").read().strip() if os.path.exists(f"status.{k}") else None for k in range(r["ranks"])}
# (a killed rank's shell may live long enough to record the SIGKILL, 137)
for k in killed:
    assert status[k] in (None, "137"), f"{label}: rank {k} on node2 exited {status[k]}: it was not killed"
wrong = {k: s for k, s in status.items() if k not in killed and s != "3"}
assert not wrong, f"{label}: living ranks' exit statuses {wrong}, expected 3"
print(f"cluster.node_kill: {label}: lost_ranks {r['lost_ranks']} (node2's), living ranks exit 3, "
      f"masters {masters or '-'}, makespan {r['makespan']:.2f} s")
PY
    say "$label: output identical to an uninterrupted run's ($(find ../ref -type f | wc -l) files)"
    cd ..
  }
  kill_run flat workers node0:2,node1:1,node2:1
  kill_run hierarchical workers node0:3,node1:2,node2:1 --farmer hierarchical --masters 0
  kill_run hierarchical-master master node0:3,node1:2,node2:2 --farmer hierarchical --masters 0
  # 4. The decentralised farm, with pfarm-mandelbrot (pfarm-calcium streams its results, which this farm does not
  #    carry), on node0:2,node1:1,node2:1: rank 3, alone on node2, is a claimer; rank 0 watches. It writes nothing
  #    while it runs, and its ranks' CPU time grows in MPI_Init and the setup's collectives too (they poll), so no
  #    sign says the farm has begun: node2 is killed once rank 3 has used a given CPU time, under a startup bound of
  #    15 s (PFARM_STARTUP_TIMEOUT). A kill that fell before the farm began ends every living rank with status 4; one
  #    that fell after rank 3's part of the farm ended leaves every living rank with status 0 (both checked). Either
  #    way the run is made again, the CPU time at the kill halfway between the latest too early and too late (doubled
  #    while none was too late). Once a kill fell in the farm: the image byte-identical to an uninterrupted run's,
  #    lost_ranks [3], every living rank exiting 3.
  dargs=(--width 1600 --height 1600 --max-iterations 3000 --technique fss --farmer decentralised --verify none --json
         --quiet --on-worker-loss continue=2)
  timed "decentralised reference" local_mpi 3 "$MANDELBROT" "${dargs[@]}" --output dref.pgm >/dev/null
  in_farm=0 early=0 late=""
  cpu=0.3
  for _ in 1 2 3 4 5 6; do  # at most six runs
    rm -rf decentralised && mkdir decentralised && cd decentralised
    t0=$SECONDS
    set +e
    PFARM_STARTUP_TIMEOUT=15 timeout 80 "$PFARM_CLUSTER" run --recovery --host node0:2,node1:1,node2:1 -- "${wrap[@]}" \
      "$MANDELBROT" "${dargs[@]}" --output run.pgm >run.json 2>run.err &
    job=$!
    python3 - "$job" "$cpu" <<'PY'
import os, sys, time
job, cpu = int(sys.argv[1]), float(sys.argv[2])
tick = os.sysconf("SC_CLK_TCK")
until = time.monotonic() + 60
while time.monotonic() < until:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if open(f"/proc/{pid}/comm").read().strip() != "pfarm-mandelbro":
                continue
            if b"OMPI_COMM_WORLD_RANK=3" not in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
                continue
            stat = open(f"/proc/{pid}/stat").read()
            fields = stat[stat.rfind(")") + 2:].split()
            if (int(fields[11]) + int(fields[12])) / tick >= cpu:
                sys.exit(0)
        except OSError:
            pass
    try:
        os.kill(job, 0)
    except OSError:
        print(f"the run ended before rank 3 computed {cpu} s", file=sys.stderr)
        sys.exit(3)
    time.sleep(0.02)
sys.exit(f"rank 3 did not compute {cpu} s within 60 s")
PY
    ready=$?
    [ $ready -eq 0 ] || [ $ready -eq 3 ] || fail "decentralised: node2 could not be killed: $(grep -v 'PMIX ERROR' run.err | tail -5)"
    pc kill node2 >/dev/null
    say "decentralised: node2 killed $((SECONDS - t0)) s after mpirun started (rank 3 at $cpu s of CPU)"
    wait $job
    rc=$?
    set -e
    [ $rc -ne 124 ] || fail "decentralised: the run did not end within 80 s after node2 was lost: $(grep -v 'PMIX ERROR' run.err | tail -5)"
    living=$(for k in 0 1 2; do printf '%s ' "$(cat status.$k 2>/dev/null)"; done)
    if grep -q "a rank was lost before the farm began" run.err; then
      [ "$living" = "4 4 4 " ] || fail "decentralised: killed before the farm began, but the living ranks exited $living"
      say "decentralised: the kill fell before the farm began (every living rank exited 4); again, later"
      early=$cpu
    elif [ $ready -eq 3 ] || [ "$living" = "0 0 0 " ]; then
      cmp -s ../dref.pgm run.pgm || fail "decentralised: the kill fell after the farm, but the image differs"
      say "decentralised: the kill fell after rank 3's part of the farm (every living rank exited 0); again, earlier"
      late=$cpu
    else
      in_farm=1
      break
    fi
    cd ..
    if [ -z "$late" ]; then
      cpu=$(python3 -c "print(round(2 * $cpu, 3))")
    else
      cpu=$(python3 -c "print(round(($early + $late) / 2, 3))")
    fi
  done
  [ $in_farm -eq 1 ] || fail "decentralised: no kill fell in the farm (too early up to $early s of CPU, too late from ${late:-never} s)"
  [ $rc -eq 3 ] || fail "decentralised: run --recovery exited $rc, expected 3: $(grep -v 'PMIX ERROR' run.err | tail -5)"
  cmp -s ../dref.pgm run.pgm || fail "decentralised: the image differs from an uninterrupted run's"
  [ "$(grep -lx node2 host.* | sed 's/host\.//' | tr '\n' ' ')" = "3 " ] || fail "decentralised: node2 did not hold rank 3 alone"
  python3 - <<'PY'
import json, os
t = open("run.json").read()
r = json.loads(t[t.index("{"):t.rindex("}") + 1])
assert r["lost_ranks"] == [3], f"decentralised: lost_ranks {r['lost_ranks']}, expected [3] (node2's)"
status = {k: open(f"status.{k}").read().strip() if os.path.exists(f"status.{k}") else None for k in range(4)}
wrong = {k: s for k, s in status.items() if k != 3 and s != "3"}
assert not wrong, f"decentralised: living ranks' exit statuses {wrong}, expected 3"
print(f"cluster.node_kill: decentralised: lost_ranks [3] (node2's), living ranks exit 3, makespan {r['makespan']:.2f} s")
PY
  say "decentralised: image identical to an uninterrupted run's"
  cd ..
  ;;

slurm)
  # Slurm on the emulated nodes: srun --mpi=pmix starts pfarm-calcium on 3 nodes (output identical to one rank's)
  # and the decentralised farm (checksum as on one node), and an sbatch job runs mpirun in its allocation
  # (pfarm-mandelbrot, checksum as on one node).
  pc slurm -- sinfo -N -h -o "%N %T" >sinfo.txt
  [ "$(grep -c idle sinfo.txt)" -eq 3 ] || fail "not 3 idle nodes: $(cat sinfo.txt)"
  args=(--channels 300 --steps 400 --peak-duration 0.002 --voltage-step 10 --experiments 26 --seed 5 --quiet)
  local_mpi 1 "$CALCIUM" --technique static --output ref "${args[@]}" >/dev/null
  timed "srun" pc slurm -- srun --mpi=pmix --kill-on-bad-exit=1 -N 3 -n 4 "$CALCIUM" --technique multi --output srun \
    "${args[@]}" >srun.out
  diff -r ref srun >/dev/null || fail "srun: output differs from the single-node run's"
  local_mpi 4 "$MANDELBROT" "${mandel_args[@]}" --technique gss >ref.json
  # The decentralised farm under srun: OMPI_MCA_osc=pt2pt,sm comes from the harness's environment, which srun passes on.
  timed "srun decentralised" pc slurm -- srun --mpi=pmix --kill-on-bad-exit=1 -N 3 -n 4 "$MANDELBROT" \
    "${mandel_args[@]}" --technique gss --farmer decentralised --farmer-computes >srun-d.json
  [ "$(json_field srun-d.json checksum)" = "$(json_field ref.json checksum)" ] || fail "srun decentralised: checksum"
  cat >job.sh <<EOF
#!/bin/bash
#SBATCH -N 3
#SBATCH -n 4
#SBATCH -o $work/job.out
echo "batch script on \$(hostname), nodes \$SLURM_JOB_NODELIST"
mpirun $MANDELBROT ${mandel_args[*]} --technique gss >$work/job.json
EOF
  # (sbatch --wait polls every few seconds; scontrol answers at once)
  t0=$SECONDS
  pc slurm -- sbatch --parsable job.sh >sbatch.out || fail "sbatch: $(cat sbatch.out)"
  id=$(cut -d';' -f1 sbatch.out)
  for _ in $(seq 1 1200); do
    pc slurm -- scontrol -o show job "$id" >job.state
    grep -qE "JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)" job.state && break
    sleep 0.1
  done
  grep -q "JobState=COMPLETED .*ExitCode=0:0" job.state || fail "sbatch job $id: $(cat job.state job.out)"
  say "sbatch: $((SECONDS - t0)) s"
  grep -q "batch script on node0, nodes node\[0-2\]" job.out || fail "batch output: $(cat job.out)"
  [ "$(json_field job.json checksum)" = "$(json_field ref.json checksum)" ] || fail "sbatch: checksum differs"
  [ "$(json_field job.json ranks)" = 4 ] || fail "sbatch: not 4 ranks"
  say "srun output identical, srun decentralised checksum right; sbatch + mpirun checksum" \
    "$(json_field job.json checksum) on 4 ranks"
  ;;

*)
  fail "unknown case '$case_name'"
  ;;
esac
