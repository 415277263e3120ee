#!/usr/bin/env python3
"""Scores mpnanny-check on the labelled corpus: recall and false positives per check.

Each test/corpus/*.cpp is a small self-contained LibTorch snippet (mock headers). A line
that must fire ends with `// expect: mpnanny-<check>`; a look-alike safe line ends with
`// ok: mpnanny-<check>` (several checks: `// expect: mpnanny-a, mpnanny-b`). A finding on a
line not marked `expect` for its check is a false positive, whatever else the line says.

Fails (exit 1) when a check's recall is under --min-recall (95 %) or its false-positive
rate, FP / (ok lines + FP), is over --max-fp-rate (5 %), or when a snippet does not compile.
Python 3 standard library only.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
MARKER = re.compile(r"//\s*(expect|ok):\s*(mpnanny-[\w-]+(?:\s*,\s*mpnanny-[\w-]+)*)")


def markers(path):
    """{line: {"expect": set(checks), "ok": set(checks)}} from the trailing comments."""
    out = defaultdict(lambda: {"expect": set(), "ok": set()})
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            for kind, names in MARKER.findall(text):
                for name in names.split(","):
                    out[number][kind].add(name.strip())
    return out


def scan(tool, mock, rules, path):
    # No header cache: the score is about findings (scan-cache-corpus.test proves the cache
    # changes none), and a test must not write into the user's ~/.cache.
    cmd = [tool, "--format=json", "--checks=-*,mpnanny-*", "-j", "1", "--no-cache"]
    if rules:
        cmd.append("--rules=" + rules)
    cmd += [path, "--", "-std=c++17", "-isystem", mock]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1):
        return None, "exit %d: %s" % (proc.returncode, proc.stderr.strip()[-2000:])
    try:
        return json.loads(proc.stdout), None
    except ValueError as e:
        return None, "bad JSON from mpnanny-check: %s" % e


class Tee:
    """Prints to the terminal and to a file at once."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for s in self.streams:
            s.write(text)

    def flush(self):
        for s in self.streams:
            s.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpnanny-check", required=True, help="path of the mpnanny-check binary")
    ap.add_argument("--mock", default=os.path.join(SOURCE_DIR, "test", "checks", "Inputs", "mock"),
                    help="mock LibTorch headers (default: test/checks/Inputs/mock)")
    ap.add_argument("--corpus", default=HERE, help="folder of the snippets (default: this one)")
    ap.add_argument("--rules", default="", help="knowledge base folder (default: bundled)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--min-recall", type=float, default=0.95)
    ap.add_argument("--max-fp-rate", type=float, default=0.05)
    ap.add_argument("--verbose", action="store_true", help="list every miss and false positive")
    ap.add_argument("--table-file", default="",
                    help="also write what is printed here (tools/test.sh shows it after ctest)")
    args = ap.parse_args()
    if args.table_file:
        sys.stdout = Tee(sys.stdout, open(args.table_file, "w"))

    files = sorted(glob.glob(os.path.join(args.corpus, "*.cpp")))
    if not files:
        print("corpus: no snippet in %s" % args.corpus)
        return 1

    expect = defaultdict(int)
    found = defaultdict(int)
    ok = defaultdict(int)
    fps = defaultdict(int)
    misses, false_positives, broken = [], [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda f: scan(args.mpnanny_check, args.mock, args.rules, f), files))
    for path, (findings, error) in zip(files, results):
        name = os.path.relpath(path, args.corpus)
        if error:
            broken.append("%s: %s" % (name, error))
            continue
        marks = markers(path)
        fired = defaultdict(set)  # line -> checks that fired there (a line counts once)
        for f in findings:
            if os.path.realpath(f["file"]) == os.path.realpath(path):
                fired[f["line"]].add(f["check"])
        for line, m in sorted(marks.items()):
            for check in m["expect"]:
                expect[check] += 1
                if check in fired.get(line, ()):
                    found[check] += 1
                else:
                    misses.append("%s:%d: %s did not fire" % (name, line, check))
            for check in m["ok"]:
                ok[check] += 1
        for line, checks in sorted(fired.items()):
            expected_here = marks[line]["expect"] if line in marks else set()
            okay_here = marks[line]["ok"] if line in marks else set()
            for check in sorted(checks - expected_here):
                fps[check] += 1
                what = "a line marked ok" if check in okay_here else "an unmarked line"
                false_positives.append("%s:%d: %s fired on %s" % (name, line, check, what))

    checks = sorted(set(expect) | set(ok) | set(fps))
    header = "%-30s %6s %6s %7s %6s %5s %7s  %s" % (
        "check", "expect", "found", "recall", "ok", "FP", "FP rate", "")
    print("corpus: %d snippets in %s" % (len(files), os.path.relpath(args.corpus, os.getcwd())))
    print(header)
    print("-" * len(header.rstrip()))
    failed = []
    totals = [0, 0, 0, 0]
    for c in checks:
        e, fd, o, fp = expect[c], found[c], ok[c], fps[c]
        totals = [totals[0] + e, totals[1] + fd, totals[2] + o, totals[3] + fp]
        recall = fd / e if e else None
        rate = fp / (o + fp) if (o + fp) else 0.0
        bad = []
        if recall is not None and recall < args.min_recall:
            bad.append("recall")
        if rate > args.max_fp_rate:
            bad.append("FP")
        if bad:
            failed.append(c)
        print("%-30s %6d %6d %7s %6d %5d %6.1f%%  %s" % (
            c, e, fd, "%.1f%%" % (100 * recall) if recall is not None else "-", o, fp,
            100 * rate, "FAIL (" + ", ".join(bad) + ")" if bad else "ok"))
    e, fd, o, fp = totals
    print("-" * len(header.rstrip()))
    print("%-30s %6d %6d %7s %6d %5d %6.1f%%" % (
        "total", e, fd, "%.1f%%" % (100 * fd / e) if e else "-", o, fp,
        100 * fp / (o + fp) if (o + fp) else 0.0))

    if misses or false_positives or broken:
        shown = (misses + false_positives) if (args.verbose or failed) else []
        for line in shown + broken:
            print("  " + line)
    if broken:
        print("corpus: %d snippet(s) could not be scanned" % len(broken))
    if failed:
        print("corpus: FAILED for %s (need recall >= %.0f%% and FP rate <= %.0f%%)" % (
            ", ".join(failed), 100 * args.min_recall, 100 * args.max_fp_rate))
    if failed or broken:
        return 1
    print("corpus: every check meets recall >= %.0f%% and FP rate <= %.0f%%" % (
        100 * args.min_recall, 100 * args.max_fp_rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
