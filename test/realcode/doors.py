#!/usr/bin/env python3
"""Both doors on real code: mpnanny-check and clang-tidy-16 with the plugin must report the
same findings on every real-code file. Runs on a sample of each repository's files read whole
(the N of its label file's `files:` with the most labels), with the compilation database, the project file
and the facts that score.py left in src/OWNER+NAME/.mpnanny-build/ (run tools/realcode.sh or
score.py on the repository first), so that both doors see what a user's two doors would see:
mpnanny-check finds the facts and the project file itself; clang-tidy is given the facts file
and a declared precision as a project's `.clang-tidy` would give them
(CheckOptions: {Precision: P, FactsFile: F}).

  python3 test/realcode/doors.py --per-repo 3                   # every repository scored
  python3 test/realcode/doors.py Lehdari/DooT2 --per-repo 10

Prints, per file, "same" with the number of findings or the lines only one door gave; exits
0 when every file agrees, 1 when one differs, 2 on bad input.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

import labels as label_files
from scan import BUILD_FOLDER

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
FINDING = re.compile(r"^(?P<file>\S+):(?P<line>\d+):(?P<col>\d+): warning: (?P<text>.*) "
                     r"\[(?P<check>mpnanny-[\w-]+)\]$")


def findings(output):
    """The mpnanny warnings of a tool's output, as a set of their lines."""
    return {line for line in output.splitlines() if FINDING.match(line)}


def run(cmd, cwd, timeout):
    try:
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=timeout)
        return proc.returncode, proc.stdout
    except subprocess.TimeoutExpired:
        return None, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repos", nargs="*", help="OWNER/NAME (default: every label file)")
    ap.add_argument("--mpnanny-check", default=os.path.join(SOURCE_DIR, "build", "bin",
                                                            "mpnanny-check"))
    ap.add_argument("--plugin", default=None, help="libmpnanny-tidy.so (default: under the "
                    "build folder of --mpnanny-check)")
    ap.add_argument("--clang-tidy", default="clang-tidy-16")
    ap.add_argument("--per-repo", type=int, default=3, help="files per repository")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per file and door")
    args = ap.parse_args()
    # The doors run in each repository's folder: a path given relative to here (realcode.sh
    # passes build/bin/mpnanny-check) must not be read from there.
    args.mpnanny_check = os.path.abspath(args.mpnanny_check)
    if args.plugin:
        args.plugin = os.path.abspath(args.plugin)

    build_root = os.path.dirname(os.path.dirname(os.path.abspath(args.mpnanny_check)))
    plugin = args.plugin or next(iter(glob.glob(os.path.join(build_root, "**", "libmpnanny-tidy.so"),
                                                recursive=True)), None)
    if not os.path.exists(args.mpnanny_check) or not plugin:
        sys.exit("doors.py: build mpnanny-check and mpnanny-tidy first (%s)" % build_root)

    docs = []
    for path in label_files.all_label_files():
        try:
            doc = label_files.load(path)
        except label_files.LabelError as e:
            print("doors.py: %s" % e, file=sys.stderr)
            return 2
        if not args.repos or doc["repo"] in args.repos:
            docs.append(doc)
    if args.repos and len(docs) != len(args.repos):
        print("doors.py: no label file for some of %s" % ", ".join(args.repos), file=sys.stderr)
        return 2

    differ = compared = 0
    for doc in docs:
        root = label_files.repo_dir(doc["repo"])
        build = os.path.join(root, BUILD_FOLDER)
        database = os.path.join(build, "compile_commands.json")
        if not os.path.exists(database):
            print("%s: no compilation database (run score.py on it first): skipped" % doc["repo"])
            continue
        with open(database) as f:
            listed = {os.path.normpath(e["file"]) for e in json.load(f)}
        # The files with the most labels first: agreeing on nothing proves little.
        labelled = {}
        for label in doc["labels"] or []:
            labelled[label["path"]] = labelled.get(label["path"], 0) + 1
        sample = sorted((p for p in doc.get("files") or []
                         if os.path.normpath(os.path.join(root, p)) in listed),
                        key=lambda p: (-labelled.get(p, 0), p))[:args.per_repo]
        # The plugin looks for the facts upward from each command's directory, which is the
        # repository here (a CMake build's is the build folder, where the facts are): name the
        # file, as a project's .clang-tidy would.
        options = []
        if doc["precision_how"] == "declared":
            options.append("Precision: %s" % doc["precision"])
        facts = os.path.join(build, "mpnanny-facts.json")
        if os.path.exists(facts):
            options.append("FactsFile: '%s'" % facts)
        config = "{Checks: '-*,mpnanny-*'%s}" % (
            ", CheckOptions: {%s}" % ", ".join(options) if options else "")
        for rel in sample:
            path = os.path.join(root, rel)
            rc_check, out_check = run([args.mpnanny_check, "-p", build, path], root, args.timeout)
            rc_tidy, out_tidy = run([args.clang_tidy, "--load", plugin, "--config=" + config,
                                     "-p", build, path], root, args.timeout)
            compared += 1
            if rc_check is None or rc_tidy is None:
                differ += 1
                print("%s %s: a door ran past %d s" % (doc["repo"], rel, args.timeout))
                continue
            a, b = findings(out_check), findings(out_tidy)
            if a == b:
                print("%s %s: same (%d finding(s))" % (doc["repo"], rel, len(a)))
                continue
            differ += 1
            print("%s %s: DIFFER" % (doc["repo"], rel))
            for line in sorted(a - b):
                print("  only mpnanny-check: " + line)
            for line in sorted(b - a):
                print("  only clang-tidy:    " + line)
    print("doors: %d file(s) compared, %d differ" % (compared, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
