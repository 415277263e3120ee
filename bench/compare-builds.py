#!/usr/bin/env python3
"""Runs mpnanny_bench of several builds in turn, round after round, and prints each row's median
over rounds with its range, one column per build: a regression check against an older commit.

Build each commit's bench in a worktree first, for example:
  git worktree add /tmp/old c7b0994 && cmake -S /tmp/old -B /tmp/old/build -G Ninja \\
      -DMPNANNY_BUILD_CHECKS=OFF -DMPNANNY_BUILD_TESTS=OFF && ninja -C /tmp/old/build bench/mpnanny_bench
  bench/compare-builds.py --rounds 5 old=/tmp/old/build/bench/mpnanny_bench new=build/bench/mpnanny_bench

The builds run one after another within a round, in reversed order every other round, so that
a machine that speeds up or slows down during the run favours none of them. Stat rows are the
pass's time over one at::sum's; step rows the overhead against the plain step next to it."""
import argparse
import collections
import re
import statistics
import subprocess
import sys

STAT_ROW = re.compile(r"^(\S.{0,23}?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")
OVERHEAD_ROW = re.compile(r"^(overhead, [^%]+?)\s+([+-][\d.]+) %")
PLAIN_STEP_ROW = re.compile(r"^step without the nanny\s+([\d.]+) ms")


def rows_of(output):
    """The numbers of one mpnanny_bench run, by row name."""
    rows = {}
    for line in output.splitlines():
        if m := STAT_ROW.match(line):
            rows["stat " + m.group(1).strip()] = float(m.group(6))
        elif m := OVERHEAD_ROW.match(line):
            rows[m.group(1).strip() + " (%)"] = float(m.group(2))
        elif m := PLAIN_STEP_ROW.match(line):
            rows["step without the nanny (ms)"] = float(m.group(1))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("builds", nargs="+", metavar="NAME=BENCH", help="a name and its mpnanny_bench")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.builds)
    seen = collections.defaultdict(lambda: collections.defaultdict(list))
    for round_index in range(args.rounds):
        order = list(builds) if round_index % 2 == 0 else list(reversed(builds))
        for name in order:
            run = subprocess.run([builds[name]], capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit("compare-builds.py: %s exited %d: %s" % (name, run.returncode, run.stderr[-400:]))
            for row, value in rows_of(run.stdout).items():
                seen[name][row].append(value)
            print("round %d: %s done" % (round_index + 1, name), file=sys.stderr, flush=True)
    rows = sorted({row for name in builds for row in seen[name]})
    print("%-36s" % "row" + "".join("%24s" % name for name in builds))
    for row in rows:
        cells = []
        for name in builds:
            values = seen[name].get(row, [])
            cells.append("%.2f (%.2f..%.2f)" % (statistics.median(values), min(values), max(values))
                         if values else "-")
        print("%-36s" % row + "".join("%24s" % cell for cell in cells))


if __name__ == "__main__":
    main()
