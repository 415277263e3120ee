#!/usr/bin/env python3
"""Kernel files through mpnanny-check: exit codes and the cost of a scan against the parse.

  bench/kernel-scan.py --build build exits DIR...    every .cu/.cuh/.cpp file under each DIR,
      scanned once with no CUDA toolkit (MPNANNY_CUDA_PATH=none) and once with whatever
      toolkit the machine has: exit code, compile errors, seconds (a table; no finding is
      printed, and none is kept)
  bench/kernel-scan.py --build build cost FILE...    per file, the median CPU time of --reps
      runs of `clang++ -fsyntax-only` with the scan's own flags (written by
      `mpnanny-check --export-compile-commands`) and of `mpnanny-check --no-cache`, and
      their ratio (the issue's target: at most 1.5)

Files are given the flags `-std=c++17 -I<their folder>` and `-I<the folder above>` (extensions'
setup.py files name their source root); LibTorch's headers are added by mpnanny-check.
Not a test: the numbers depend on the machine. Python 3 standard library only.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

SOURCES = (".cu", ".cuh", ".cpp")


def flags_for(path):
    folder = os.path.dirname(os.path.abspath(path))
    return ["-std=c++17", "-I" + folder, "-I" + os.path.dirname(folder)]


def scan(check, path, env, timeout):
    start = time.monotonic()
    try:
        run = subprocess.run([check, "--no-cache", "--timeout=%d" % timeout, path, "--"] +
                             flags_for(path), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return "timeout", 0, time.monotonic() - start
    errors = sum(int(n) for n in re.findall(r": (\d+) compile error\(s\)", run.stderr))
    return run.returncode, errors, time.monotonic() - start


def exits(args, check):
    with_toolkit = dict(os.environ)
    with_toolkit.pop("MPNANNY_CUDA_PATH", None)
    without = dict(with_toolkit, MPNANNY_CUDA_PATH="none")
    files = []
    for d in args.paths:
        for root, _, names in os.walk(d):
            files += [os.path.join(root, n) for n in sorted(names) if n.endswith(SOURCES)]
    print("| file | exit (no toolkit) | errors | s | exit (machine's toolkit) | errors | s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for f in sorted(files):
        a = scan(check, f, without, args.timeout)
        b = scan(check, f, with_toolkit, args.timeout)
        print("| %s | %s | %d | %.1f | %s | %d | %.1f |" % (f, a[0], a[1], a[2], b[0], b[1], b[2]),
              flush=True)


def timed(cmd, cwd=None):
    """CPU seconds (user + system) the command took: on a shared machine, where a niced
    process may wait minutes for a core, wall time says more about the neighbours."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cost(args, check):
    print("| file | clang++ -fsyntax-only (CPU s) | mpnanny-check --no-cache (CPU s) | ratio |")
    print("| --- | --- | --- | --- |")
    for f in args.paths:
        with tempfile.TemporaryDirectory() as scratch:
            db = os.path.join(scratch, "compile_commands.json")
            subprocess.run([check, "--export-compile-commands=" + db, f, "--"] + flags_for(f),
                           check=True)
            entry = json.load(open(db))[0]
        parse = [args.clang]
        skip = False
        for a in entry["arguments"][1:]:
            if skip:
                skip = False
            elif a == "-o":
                skip = True
            elif a != "-c":
                parse.append(a)
        parse.append("-fsyntax-only")
        x_parse, x_scan = [], []
        for _ in range(args.reps):  # interleaved: a change in load hits both alike
            x_parse.append(timed(parse, cwd=entry["directory"]))
            x_scan.append(timed([check, "--no-cache", f, "--"] + flags_for(f)))
        p, s = statistics.median(x_parse), statistics.median(x_scan)
        print("| %s | %.1f | %.1f | %.2f |" % (f, p, s, s / p), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--clang", default="clang++-16")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("mode", choices=["exits", "cost"])
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    check = os.path.join(args.build, "bin", "mpnanny-check")
    if not os.access(check, os.X_OK):
        sys.exit("kernel-scan.py: no %s (build the mpnanny-check target)" % check)
    (exits if args.mode == "exits" else cost)(args, check)


if __name__ == "__main__":
    main()
