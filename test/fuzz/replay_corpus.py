#!/usr/bin/env python3
"""Replays the fuzzers' committed corpora through the shipped executables (this build's compiler,
no sanitizers): every past crash stays a regression test even where the fuzzers cannot be built.

  replay_corpus.py --corpus test/fuzz/corpus --work DIR [--mpnanny BIN] [--mpnanny-check BIN]
                   [--mpnanny-mcp BIN]

query/: each file through every command of the mpnanny CLI (summary, alerts, stats, sites, report,
        compare): exit 0, or 2 with "mpnanny: error: <file>: ..." on stderr; never a signal.
rules/: each file as the only rule file of --rules: mpnanny-check --list-checks exits 0, or 2 with
        the message pointing into the file (file:line:col: error:).
mcp/:   each session through mpnanny-mcp after an initialize, rooted in an empty folder: the server
        reads to the end of its input (exit 0), and every line it writes is JSON-RPC.
"""
import json
import argparse
import os
import re
import shutil
import subprocess
import sys

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message, flush=True)


def run(command):
    try:
        proc = subprocess.run(command, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "", "timed out"
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def query(args):
    folder = os.path.join(args.corpus, "query")
    for name in sorted(os.listdir(folder)):
        db = os.path.join(args.work, "query", name)
        os.makedirs(os.path.dirname(db), exist_ok=True)
        shutil.copy(os.path.join(folder, name), db)
        commands = [["summary"], ["alerts"], ["stats", "--step", "0"], ["sites"],
                    ["report", "-o", db + ".html"]]
        for command in commands:
            code, _, err = run([args.mpnanny] + command[:1] + ["--db", db] + command[1:])
            label = "%s: mpnanny %s" % (name, command[0])
            check(code is not None and code in (0, 1, 2), "%s: exit %s %s" % (label, code, err[-500:]))
            if code == 2:
                check("mpnanny: error: " in err and db in err, "%s: exit 2 without naming the file: %s" % (label, err))
        code, _, err = run([args.mpnanny, "compare", db, db])
        check(code is not None and code in (0, 2), "%s: mpnanny compare: exit %s %s" % (name, code, err[-500:]))
        print("query/%s: replayed" % name, flush=True)


def rules(args):
    folder = os.path.join(args.corpus, "rules")
    for name in sorted(os.listdir(folder)):
        rules_dir = os.path.join(args.work, "rules", name)
        shutil.rmtree(rules_dir, ignore_errors=True)
        os.makedirs(rules_dir)
        target = os.path.join(rules_dir, "rules.yaml")
        shutil.copy(os.path.join(folder, name), target)
        code, _, err = run([args.mpnanny_check, "--rules=" + rules_dir, "--list-checks"])
        check(code in (0, 2), "rules/%s: exit %s %s" % (name, code, err[-500:]))
        if code == 2:
            check(re.search(re.escape(target) + r":\d+:\d+: error: ", err),
                  "rules/%s: the error does not point into the file: %s" % (name, err))
        print("rules/%s: exit %s" % (name, code), flush=True)


INITIALIZE = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
              b'"capabilities":{},"clientInfo":{"name":"replay","version":"1"}}}\n')


def mcp(args):
    folder = os.path.join(args.corpus, "mcp")
    root = os.path.join(args.work, "mcp-root")
    os.makedirs(root, exist_ok=True)
    for name in sorted(os.listdir(folder)):
        session = INITIALIZE + open(os.path.join(folder, name), "rb").read()
        try:
            proc = subprocess.run([args.mpnanny_mcp, "--root", root], input=session, capture_output=True,
                                  timeout=300)
        except subprocess.TimeoutExpired:
            check(False, "mcp/%s: no end within 300 s" % name)
            continue
        check(proc.returncode == 0, "mcp/%s: the server ended with %d: %s" %
              (name, proc.returncode, proc.stderr.decode("utf-8", "replace")[-500:]))
        for line in proc.stdout.splitlines():
            try:
                answer = json.loads(line)
                check(answer.get("jsonrpc") == "2.0", "mcp/%s: not JSON-RPC: %r" % (name, line[:200]))
            except ValueError:
                check(False, "mcp/%s: not JSON: %r" % (name, line[:200]))
        print("mcp/%s: %d answers" % (name, len(proc.stdout.splitlines())), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--mpnanny")
    parser.add_argument("--mpnanny-check")
    parser.add_argument("--mpnanny-mcp")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    if args.mpnanny:
        query(args)
    if args.mpnanny_check:
        rules(args)
    if args.mpnanny_mcp:
        mcp(args)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
