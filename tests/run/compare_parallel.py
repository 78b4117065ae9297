#!/usr/bin/env python3
"""pfarm-run beside GNU parallel: each command line of the table (from GNU parallel's manual and tutorial) runs through
`parallel --will-cite` and through `pfarm-run` under mpiexec, each in a fresh folder with the same input, and must give
the same exit status, the same standard output (sorted lines unless the line keeps the order with -k), the same job
log rows (Seq, Exitval, Signal, Command) and the same files left behind (their lines sorted: concurrent commands may
append in another order). The refused lines must make pfarm-run exit 255 with a message naming what it refuses.

usage: compare_parallel.py WORKDIR PFARM_RUN MPIEXEC [MPIEXEC_ARGS...] -- [POSTFLAGS...]
"""
import os
import shutil
import subprocess
import sys

FUNCTION = "() {  echo \"f $1\"\n}"

# (name, argument lists run in turn in the same folder, stdin text, files to create first, environment)
CASES = [
    ("list", [["echo", ":::", "A", "B", "C"]], None, {}, {}),
    ("cross_product_k", [["-k", "echo", ":::", "A", "B", "C", ":::", "1", "2"]], None, {}, {}),
    ("quoting", [["-k", "echo", "{}", ":::", "a b", "it's", "x\"y", "$HOME", "", "a;b"]], None, {}, {}),
    ("modifiers", [["-k", "echo", "{}:{.}:{/}:{//}:{/.}", ":::", "dir/sub/file.tar.gz", "/a", ".bashrc", "x.y", "a/b/", "f"]],
     None, {}, {}),
    ("positional", [["-k", "echo", "{2}-{1}", ":::", "a", "b", ":::", "c", "d"]], None, {}, {}),
    ("positional_modifiers", [["echo", "{1.}", "{2/}", "{2//}", "{1/.}", ":::", "a.x", "p/q.r", ":::", "d/e.y"]], None, {}, {}),
    ("last_argument", [["echo", "{-1}", "{-2}", ":::", "a", ":::", "b"]], None, {}, {}),
    ("sequence_number", [["-k", "echo", "{#}", "{}", ":::", "a", "b", "c"]], None, {}, {}),
    ("arguments_file", [["echo", ":::::".replace(":::::", "::::"), "args.txt"]], None, {"args.txt": "a\n\nb c\nd"}, {}),
    ("arg_file_option", [["-a", "args.txt", "echo", "x"]], None, {"args.txt": "1\n2\n3\n"}, {}),
    ("two_files", [["-k", "echo", "::::", "f1", "f2"]], None, {"f1": "a\nb\n", "f2": "1\n2\n"}, {}),
    ("file_and_list", [["echo", "::::", "f1", ":::", "x", "y"]], None, {"f1": "a\nb\n"}, {}),
    ("linked_file", [["-k", "echo", "::::", "f1", "::::+", "f2"]], None, {"f1": "a\nb\nc\n", "f2": "1\n2\n3\n"}, {}),
    ("stdin", [["echo", "n"]], "1\n2\n3\n", {}, {}),
    ("stdin_commands", [[]], "echo one\necho two\nexit 3\n", {}, {}),
    ("null_delimited", [["-k", "-0", "echo", "x{}"]], "a\0b c\0it's\n\0", {}, {}),
    ("delimiter", [["-k", "-d", "\\t", "echo", "{}."]], "a\tb c\t", {}, {}),
    ("no_run_if_empty", [["-k", "-r", "echo", "x{}"]], "a\n\n  \nb\n", {}, {}),
    ("tagstring", [["-k", "--tagstring", "{}-{#}:", "echo", ":::", "a b", "c"]], None, {}, {}),
    ("linked", [["-k", "echo", ":::", "a", "b", "c", ":::+", "1", "2", "3"]], None, {}, {}),
    ("linked_shortest", [["-k", "echo", ":::", "a", "b", ":::+", "1", "2", "3"]], None, {}, {}),
    ("colsep_stdin", [["-k", "--colsep", ",", "echo", "{2}", "{1}"]], "a,b\nc,d\n", {}, {}),
    ("colsep_regex", [["--colsep", "[;:]+", "echo", "{3}{1}"]], "a;b:c\nd::e;f\n", {}, {}),
    ("colsep_list", [["-k", "--tag", "--colsep", ",", "echo", "{2}", ":::", "x,y", "p,q"]], None, {}, {}),
    ("tag", [["--tag", "echo", ":::", "a", "b", ":::", "1"]], None, {}, {}),
    ("multiline_output_k", [["-k", "seq", ":::", "3", "1", "2"]], None, {}, {}),
    ("grouped_stderr", [["-k", "echo out {}; echo err {} >&2", ":::", "1", "2"]], None, {}, {}),
    ("exit_status", [["exit {}", ":::", "0", "1", "2", "0"]], None, {}, {}),
    ("exit_status_capped", [["exit 1", ":::"] + [str(i) for i in range(105)]], None, {}, {}),
    ("signal", [["kill -9 $$", ":::", "1"]], None, {}, {}),
    ("retries", [["--retries", "3", "echo x >> attempts; exit 1", ":::", "1"]], None, {}, {}),
    ("retries_succeed", [["--retries", "3", "echo x >> t; test $(wc -l < t) -ge 2", ":::", "1"]], None, {}, {}),
    ("timeout", [["--timeout", "1", "sleep {}", ":::", "0", "5"]], None, {}, {}),
    ("halt_soon_fail", [["--halt", "soon,fail=1", "exit {}", ":::", "0", "0", "4"]], None, {}, {}),
    ("halt_now_success", [["--halt", "now,success=1", "exit 0", ":::", "1"]], None, {}, {}),
    ("halt_done", [["--halt", "soon,done=100%", "exit {}", ":::", "0", "3"]], None, {}, {}),
    ("halt_fail_percent", [["--halt", "soon,fail=100%", "exit {}", ":::", "1", "3"]], None, {}, {}),
    ("bash_function", [["myf", ":::", "a", "b"]], None, {}, {"BASH_FUNC_myf%%": FUNCTION}),
    ("bash_syntax", [["-k", "for i in {1..3}; do echo {}$i; done", ":::", "x"]], None, {}, {}),
    ("env", [["--env", "FOO", "echo $FOO {}", ":::", "1"]], None, {}, {"FOO": "bar"}),
    ("results", [["--results", "res", "echo", ":::", "a", "b/c", ":::", "1", "2"]], None, {}, {}),
    ("redirect_per_job", [["echo {} > {.}.out", ":::", "a.txt", "b.txt"]], None, {}, {}),
    ("jobs_2", [["-j", "2", "echo", ":::", "a", "b", "c", "d", "e", "f", "g"]], None, {}, {}),
    ("jobs_4_keep_order", [["-k", "--jobs", "4", "seq", ":::", "3", "1", "2", "4", "2", "5"]], None, {}, {}),
    ("jobs_4_tag_stderr", [["--tag", "-j", "4", "echo out {}; echo err {} >&2", ":::", "a", "b", "c", "d", "e"]], None, {}, {}),
    ("jobs_4_exit_status", [["-j", "4", "exit {}", ":::", "0", "1", "2", "0", "3", "0"]], None, {}, {}),
    ("jobs_4_retries", [["-j", "4", "--retries", "2", "echo {} >> t{}; test $(wc -l < t{}) -ge 2", ":::", "1", "2", "3"]],
     None, {}, {}),
    ("line_buffer", [["--line-buffer", "seq", ":::", "3", "1", "2"]], None, {}, {}),
    ("line_buffer_keep_order", [["--lb", "-k", "sleep 0.{}; seq {}", ":::", "3", "1", "2"]], None, {}, {}),
    ("line_buffer_tag_jobs", [["--lb", "--tag", "-j", "2", "echo out {}; echo err {} >&2; seq {}", ":::", "1", "3", "2"]],
     None, {}, {}),
    ("line_buffer_tagstring", [["--lb", "-k", "--tagstring", "{}-{#}:", "echo", ":::", "a b", "c"]], None, {}, {}),
    ("line_buffer_exit_status", [["--lb", "-j", "2", "echo {}; exit {}", ":::", "0", "1", "2", "0"]], None, {}, {}),
    ("line_buffer_joblog", [["--lb", "--joblog", "log", "echo", ":::", "a", "b"]], None, {}, {}),
    ("resume_grown", [["--joblog", "log", "echo {} >> ran", ":::", "a", "b"],
                      ["--resume", "--joblog", "log", "echo {} >> ran", ":::", "a", "b", "c"]], None, {}, {}),
    ("resume_failed", [["--joblog", "log", "echo {} >> ran; exit {}", ":::", "0", "1"],
                       ["--resume-failed", "--joblog", "log", "echo {} >> ran; exit 0", ":::", "0", "1"]], None, {}, {}),
]

# Lines pfarm-run refuses (exit 255), each with the word its message must name.
REFUSED = [
    ("perl_expression", ["echo", "{= s/a/b/ =}", ":::", "a"], "{= s/a/b/ =}"),
    ("pipe", ["--pipe", "wc", "-l"], "--pipe"),
    ("multiple_arguments", ["-X", "echo", ":::", "a", "b"], "-X"),
    ("line_buffer_ungroup", ["--line-buffer", "-u", "echo", ":::", "a"], "--line-buffer"),
    ("line_buffer_results", ["--lb", "--results", "res", "echo", ":::", "a"], "--line-buffer"),
    ("jobs_zero", ["-j", "0", "echo", ":::", "a"], "--jobs"),
    ("shuffle", ["--shuf", "echo", ":::", "a"], "--shuf"),
]


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def prepare(folder, files):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for name, text in files.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)


def run(command, folder, stdin, env):
    p = subprocess.run(command, cwd=folder, input=(stdin or "").encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def joblog_rows(path):
    """(Seq, Exitval, Signal, Command) of each row of a GNU parallel job log; None when there is none."""
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        lines = f.read().decode(errors="replace").split("\n")
    if not lines[0].startswith("Seq\tHost\tStarttime"):
        fail(f"{path}: not a GNU parallel job log: {lines[0]!r}")
    rows = []
    for line in lines[1:]:
        if not line:
            continue
        f = line.split("\t", 8)
        rows.append((int(f[0]), int(f[6]), int(f[7]), f[8]))
    return sorted(rows)


def files_left(folder, skip):
    """Every file under `folder` but the job logs: relative path -> sorted lines."""
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, folder)
            if rel in skip:
                continue
            with open(p, "rb") as f:
                out[rel] = sorted(f.read().decode(errors="replace").splitlines())
    return out


def main():
    argv = sys.argv[1:]
    work, pfarm_run = argv[0], argv[1]
    sep = argv.index("--")
    launcher, post = argv[2:sep], argv[sep + 1:]
    parallel = shutil.which("parallel")
    if not parallel:
        fail("GNU parallel is not installed (scripts/setup.sh installs the 'parallel' package)")
    version = subprocess.run([parallel, "--will-cite", "--version"], stdout=subprocess.PIPE,
                             stdin=subprocess.DEVNULL).stdout.decode().splitlines()[0]
    if "GNU parallel" not in version:
        fail(f"'{parallel}' is not GNU parallel (moreutils' parallel?): {version}")
    base_env = dict(os.environ, SHELL="/bin/bash", LC_ALL="C")
    os.makedirs(work, exist_ok=True)
    compared = 0
    for name, runs, stdin, files, extra_env in CASES:
        env = dict(base_env, **extra_env)
        got = {}
        for tool in ("parallel", "pfarm-run"):
            folder = os.path.join(work, name, tool)
            prepare(folder, files)
            results = []
            for args in runs:
                own_log = "--joblog" in args
                log_args = [] if own_log else ["--joblog", "auto.joblog"]
                if tool == "parallel":
                    command = [parallel, "--will-cite"] + log_args + args
                else:
                    command = launcher + [pfarm_run] + post + ["--progress", "quiet"] + log_args + args
                code, out, err = run(command, folder, stdin, env)
                keep = "-k" in args
                log = joblog_rows(os.path.join(folder, "log" if own_log else "auto.joblog"))
                results.append((code, out if keep else sorted(out.splitlines()), log, err))
            got[tool] = (results, files_left(folder, {"auto.joblog", "log"}))
        (gnu_runs, gnu_files), (pf_runs, pf_files) = got["parallel"], got["pfarm-run"]
        for k, ((gc, go, gl, ge), (pc, po, pl, pe)) in enumerate(zip(gnu_runs, pf_runs)):
            where = f"{name} (run {k + 1}: {' '.join(runs[k])!r})"
            if gc != pc:
                fail(f"{where}: exit status {pc}, GNU parallel {gc}\npfarm-run stderr:\n{pe}")
            if go != po:
                fail(f"{where}: standard output differs\nGNU parallel: {go!r}\npfarm-run:    {po!r}\nstderr: {pe}")
            if gl != pl:
                fail(f"{where}: job log rows differ\nGNU parallel: {gl!r}\npfarm-run:    {pl!r}")
        if gnu_files != pf_files:
            fail(f"{name}: the files left differ\nGNU parallel: {gnu_files!r}\npfarm-run:    {pf_files!r}")
        compared += 1
        print(f"same: {name}")
    for name, args, named in REFUSED:
        folder = os.path.join(work, "refused", name)
        prepare(folder, {})
        code, out, err = run(launcher + [pfarm_run] + post + args, folder, None, base_env)
        if code != 255 or named not in err or "pfarm-run:" not in err:
            fail(f"refused {name}: expected exit 255 and a message naming {named!r}; got {code}: {err!r}")
        print(f"refused: {name}: {err.strip().splitlines()[0]}")
    print(f"compare_parallel: {compared} command lines the same as {version}, {len(REFUSED)} refused by name")


if __name__ == "__main__":
    main()
