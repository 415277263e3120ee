#!/usr/bin/env python3
"""Scores mpnanny-check on the real-code corpus: recall and false positives per check, per
category and per repository, findings per KLOC on unlabelled code, and parse status per file.

For each label file (labels/OWNER+NAME.yaml, format in README.md) the repository is scanned
the way a user would scan it: a compile_commands.json of its scanned files, written to
src/OWNER+NAME/.mpnanny-build/ (git-ignored), with the header's -std, include folders and
defines, LibTorch's include folders as a LibTorch CMake build gives them, and the
precision declared when the header says `precision_how: declared` (nothing when
`inferred`). One mpnanny-check process per repository scans all its files:

    mpnanny-check -p src/OWNER+NAME/.mpnanny-build --format=json -j N --timeout=S FILE...

Files scanned: every file with a label, every file listed under `files:` (read whole), and
a deterministic sample of the repository's other C++ sources that use LibTorch (a
`torch::` or `at::` in the text; outside third-party folders; ordered by the sha1 of their
path, first --unlabelled-sample of them), for findings per KLOC on code nobody labelled.

Matching is strict and simple: a FLAG label is found when a finding of its check lies on
the label's current line (labels.locate: its line, or the nearest line with its hash),
the same line only, not elsewhere in the statement. A finding (one per file, line, check)
is
  - a true positive on a line labelled FLAG for its check;
  - a false positive on a line labelled NO_FLAG for its check ("FP@NO"), on a line that
    carries labels for other checks only ("other"), or on an unlabelled line of a file
    listed under `files:` (read whole: every hazard in it is labelled; "whole");
  - unjudged anywhere else (an unlabelled line of a file not read whole, a header nobody
    labelled): counted, never as a false positive.
Findings per KLOC count only the findings in the unlabelled sample files, over their
physical lines.

Gates (--min-recall, --max-fp-rate), per check and in total: recall for the checks with at
least one FLAG label, FP rate = FP / (TP + FP) for the checks with judged findings.
Exit 0: gates met (or --no-gate); 1: a gate failed; 2: bad input (a label file that does
not load, a label that no longer points at its line, a repository not extracted, a scan
that could not run).

Python 3 standard library and PyYAML (through labels.py).
"""
import argparse
import glob
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import labels as L  # noqa: E402  (the label format: load, validate, locate)

SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
from scan import *  # noqa: F401,F403  (the scan half; test_score.py reads both through here)



# ---------------------------------------------------------------------------------------
# Matching and metrics
# ---------------------------------------------------------------------------------------

class Counts:
    FIELDS = ("flag", "found", "noflag", "fp_noflag", "fp_other", "fp_whole", "unjudged")

    def __init__(self):
        for f in self.FIELDS:
            setattr(self, f, 0)

    def add(self, other):
        for f in self.FIELDS:
            setattr(self, f, getattr(self, f) + getattr(other, f))

    @property
    def fp(self):
        return self.fp_noflag + self.fp_other + self.fp_whole

    @property
    def recall(self):
        return self.found / self.flag if self.flag else None

    @property
    def fp_rate(self):
        judged = self.found + self.fp
        return self.fp / judged if judged else None

    @property
    def noflag_rate(self):
        return self.fp_noflag / self.noflag if self.noflag else None

    def as_dict(self):
        d = {f: getattr(self, f) for f in self.FIELDS}
        d.update(tp=self.found, fp=self.fp, recall=self.recall, fp_rate=self.fp_rate,
                 fp_on_noflag_per_noflag=self.noflag_rate)
        return d


def match_repo(doc, root, located, findings, whole, sample):
    """Classifies the repository's findings against its located labels.
    located: [(label, line_now)]. Returns (classified findings, label results)."""
    real_root = os.path.realpath(root)
    by_line = defaultdict(list)
    by_statement = defaultdict(list)  # the other lines of a labelled multi-line statement
    sources = {}
    for label, line in located:
        by_line[(label["path"], line)].append(label)
        if label["path"] not in sources:
            sources[label["path"]] = L.read_lines(doc["repo"], label["path"])
        for other in L.statement_span(sources[label["path"]], line)[1:]:
            by_statement[(label["path"], other)].append(label)
    seen = OrderedDict()
    for f in findings:
        rel = os.path.relpath(os.path.realpath(f["file"]), real_root).replace(os.sep, "/")
        key = (rel, int(f["line"]), f["check"])
        if key not in seen:  # one finding per file, line and check
            seen[key] = f
    found_labels = set()
    fp_labels = set()
    out = []
    for (rel, line, check), f in seen.items():
        labs = by_line.get((rel, line)) or by_statement.get((rel, line), [])
        same = [l for l in labs if l["check"] == check]
        entry = {"path": rel, "line": line, "column": f.get("column"), "check": check,
                 "message": f.get("message", ""), "category": None}
        if rel.startswith("../"):
            entry["kind"] = "outside"
        elif any(l["verdict"] == "FLAG" for l in same):
            lab = next(l for l in same if l["verdict"] == "FLAG")
            entry.update(kind="tp", category=lab["category"], label_kind=lab["kind"])
            found_labels.add(id(lab))
        elif same:
            lab = same[0]
            entry.update(kind="fp_noflag", category=lab["category"], label_kind=lab["kind"], reason=lab["reason"])
            fp_labels.add(id(lab))
        elif labs:
            entry.update(kind="fp_other", labelled_for=sorted({l["check"] for l in labs}))
        elif rel in whole:
            entry["kind"] = "fp_whole"
        elif rel in sample:
            entry["kind"] = "sample"
        else:
            entry["kind"] = "unjudged"
        out.append(entry)
    results = []
    for label, line in located:
        results.append({"path": label["path"], "line": line, "labelled_line": label["line"],
                        "check": label["check"], "verdict": label["verdict"],
                        "category": label["category"], "label_kind": label["kind"], "reason": label["reason"],
                        "found": id(label) in found_labels if label["verdict"] == "FLAG" else None,
                        "fp": id(label) in fp_labels if label["verdict"] == "NO_FLAG" else None})
    return out, results


def tally(label_results, findings, key):
    """Counts grouped by key(label-or-finding) -> name."""
    groups = defaultdict(Counts)
    for l in label_results:
        c = groups[key(l)]
        if l["verdict"] == "FLAG":
            c.flag += 1
            c.found += 1 if l["found"] else 0
        else:
            c.noflag += 1
    for f in findings:
        k = f["kind"]
        if k in ("fp_noflag", "fp_other", "fp_whole", "unjudged"):
            c = groups[key(f)]
            setattr(c, k, getattr(c, k) + 1)
    return groups


# ---------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------

def pct(x):
    return "-" if x is None else "%.1f%%" % (100 * x)


COLS = "%6s %6s %7s %7s %5s %5s %5s %5s %7s %8s %8s"
COL_NAMES = ("FLAG", "found", "recall", "NO_FLAG", "FP@NO", "other", "whole", "FP",
             "FP rate", "FP@NO/NO", "unjudged")


def counts_row(c):
    return COLS % (c.flag, c.found, pct(c.recall), c.noflag, c.fp_noflag, c.fp_other, c.fp_whole,
                   c.fp, pct(c.fp_rate), pct(c.noflag_rate), c.unjudged)


def print_table(title, name_width, rows, total=None, extra_head="", extras=None):
    head = ("%-*s " % (name_width, title)) + (COLS % COL_NAMES) + extra_head
    print(head)
    print("-" * len(head))
    for i, (name, c) in enumerate(rows):
        print(("%-*s " % (name_width, name)) + counts_row(c) + (extras[i] if extras else ""))
    if total is not None:
        print("-" * len(head))
        print(("%-*s " % (name_width, "total")) + counts_row(total[1]) + (total[2] if len(total) > 2 else ""))
    print()


# ---------------------------------------------------------------------------------------

def label_files_from(args):
    if not args.repos:
        return sorted(os.path.join(args.labels_dir, n) for n in os.listdir(args.labels_dir)
                      if n.endswith(".yaml"))
    out = []
    for r in args.repos:
        if os.path.isfile(r):
            out.append(r)
            continue
        path = os.path.join(args.labels_dir, r.replace("/", "+") + ("" if r.endswith(".yaml") else ".yaml"))
        if not os.path.isfile(path):
            raise SystemExit("score.py: no label file %s" % path)
        out.append(path)
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("repos", nargs="*", help="label files or OWNER/NAME (default: every label file)")
    ap.add_argument("--mpnanny-check", default=os.path.join(SOURCE_DIR, "build", "bin", "mpnanny-check"),
                    help="the mpnanny-check binary (default: build/bin/mpnanny-check)")
    ap.add_argument("--labels-dir", default=os.environ.get("MPNANNY_REALCODE_LABELS", os.path.join(HERE, "labels")),
                    help="folder of the label files (env MPNANNY_REALCODE_LABELS; default: labels/)")
    ap.add_argument("--src", default=os.environ.get("MPNANNY_REALCODE_SRC", os.path.join(HERE, "src")),
                    help="folder of the extracted repositories (env MPNANNY_REALCODE_SRC; default: src/)")
    ap.add_argument("--unlabelled-sample", type=int, default=10, metavar="N",
                    help="unlabelled LibTorch sources scanned per repository for findings per KLOC (default 10)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="files scanned in parallel by each mpnanny-check (default: cores)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds one file may take (mpnanny-check --timeout; default 300)")
    ap.add_argument("--no-cache", action="store_true", help="pass --no-cache (default: keep the LibTorch header cache)")
    ap.add_argument("--cache-dir", default="", help="mpnanny-check --cache-dir")
    ap.add_argument("--rules", default="", help="mpnanny-check --rules (default: bundled)")
    ap.add_argument("--torch-include", action="append", default=[], metavar="DIR",
                    help="LibTorch include folder for the compile commands (repeatable; default: found like mpnanny-check finds it)")
    ap.add_argument("--torch2-include", action="append", default=[], metavar="DIR",
                    help="LibTorch 2.x include folder for repositories labelled `libtorch: 2` (repeatable; "
                         "default: the Debian 13 root of tools/debian13.sh when it holds LibTorch)")
    ap.add_argument("--cuda-include", default="auto", metavar="auto|none|DIR",
                    help="CUDA include folder added as -isystem (default auto: found like CUDA's CMake finds it)")
    ap.add_argument("--extra-flag", action="append", default=[], metavar="FLAG",
                    help="one more compiler flag in every compile command (repeatable)")
    ap.add_argument("--checker-arg", action="append", default=[], metavar="ARG",
                    help="one more mpnanny-check argument (repeatable)")
    ap.add_argument("--scan-dir", default="", metavar="DIR",
                    help="keep each repository's raw scan (findings, parse status, time) in DIR/OWNER+NAME.json")
    ap.add_argument("--reuse-scans", action="store_true",
                    help="with --scan-dir: score a saved scan of the same files and precision instead of scanning "
                         "again (to re-score, or to merge scans run side by side)")
    ap.add_argument("--min-recall", type=float, default=0.80)
    ap.add_argument("--max-fp-rate", type=float, default=0.10)
    ap.add_argument("--no-gate", action="store_true", help="only report: exit 0 unless the input is bad")
    ap.add_argument("--verbose", action="store_true", help="list every miss and false positive, and every file's parse status")
    ap.add_argument("--json-out", default="", metavar="FILE", help="write every number and finding as JSON")
    return ap.parse_args(argv)


# What Debian 13's libtorch-dev installs into /usr/include (dpkg -L libtorch-dev).
TORCH_HEADER_FOLDERS = ("ATen", "c10", "caffe2", "kineto", "torch")


def debian13_torch_include_dirs():
    """LibTorch 2.x's include folders from the Debian 13 root that tools/debian13.sh makes, if it
    is there. Not the root's /usr/include itself: its C library headers would stand in front of
    this machine's and break its C++ library (int_least8_t undeclared in <atomic>), so LibTorch's
    folders are linked into a folder of their own, next to the root."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = os.environ.get("MPNANNY_DEBIAN13_ROOT") or os.path.join(cache, "mpnanny-debian13", "root")
    include = os.path.join(root, "usr", "include")
    api = os.path.join(include, "torch", "csrc", "api", "include")
    if not os.path.exists(os.path.join(api, "torch", "torch.h")):
        return []
    only_torch = os.path.join(os.path.dirname(os.path.abspath(root)), "libtorch-include")
    os.makedirs(only_torch, exist_ok=True)
    for name in TORCH_HEADER_FOLDERS:
        target, link = os.path.join(include, name), os.path.join(only_torch, name)
        if os.path.isdir(target) and not os.path.lexists(link):
            os.symlink(os.path.abspath(target), link)
    return [api, only_torch]


def system_include_dirs(args):
    """{LibTorch generation: its include folders, then CUDA's} for the compile commands; only a
    warning when LibTorch's are not found. Generation 2 is missing when no 2.x headers are."""
    cuda = {"auto": find_cuda_include_dir, "none": lambda: None}.get(args.cuda_include, lambda: args.cuda_include)()
    cuda_dirs = [os.path.abspath(cuda)] if cuda else []
    torch_dirs = [os.path.abspath(d) for d in args.torch_include] or find_torch_include_dirs()
    if not torch_dirs:
        print("score.py: LibTorch's headers were not found (set TORCH_DIR or pass --torch-include)",
              file=sys.stderr)
    by_generation = {1: torch_dirs + cuda_dirs}
    torch2 = [os.path.abspath(d) for d in args.torch2_include] or debian13_torch_include_dirs()
    if torch2:
        by_generation[2] = torch2 + cuda_dirs
    return by_generation


def headers_for(doc, dirs_by_generation):
    """The include folders a repository is scanned with, and a note when its code wants LibTorch
    2.x's headers and only others were found."""
    wanted = doc.get("libtorch", 1)
    if wanted in dirs_by_generation:
        return dirs_by_generation[wanted], None
    return dirs_by_generation[1], ("written for LibTorch %d.x, scanned with the headers found (pass "
                                   "--torch2-include): calls they lack are compile errors" % wanted)


def locate_labels(doc, name):
    """[(label, line_now)] of the labels still found in the sources, and a bad-input line for
    each label that is not."""
    located, stale, cache = [], [], {}
    for label in doc["labels"] or []:
        try:
            line = L.locate(doc["repo"], label, cache)
        except OSError as e:
            stale.append("%s: %s:%s: %s" % (name, label["path"], label["line"], e.strerror or e))
            continue
        if line is None:
            stale.append("%s: %s:%s: no line has hash %s (the text changed: relabel it)"
                         % (name, label["path"], label["line"], label["hash"]))
            continue
        if label["what_if"]:
            # Scanned at the project's own precision (fp32), a latent port hazard must stay quiet.
            label = dict(label, verdict="NO_FLAG")
        located.append((label, line))
    return located, stale


def load_repo(path, args, bad_input):
    """The repository of one label file and the files to scan in it, or None when it cannot be
    scored; whatever is wrong with its input goes to bad_input."""
    try:
        doc = L.load(path)
    except L.LabelError as e:
        bad_input.append(str(e))
        return None
    repo = doc["repo"]
    root = os.path.abspath(L.repo_dir(repo))
    name = os.path.basename(path)
    if not os.path.isdir(root):
        bad_input.append("%s: %s is not extracted in %s (run test/realcode/fetch.sh)" % (name, repo, args.src))
        return None
    # Reported, not skipped: the labels that still locate are scored all the same.
    commit_file = os.path.join(root, ".mpnanny-commit")
    if os.path.exists(commit_file):
        with open(commit_file) as f:
            have = f.read().strip()
        if have != str(doc["commit"]):
            bad_input.append("%s: %s is extracted at %s, the labels are for %s" % (name, repo, have[:12], str(doc["commit"])[:12]))
    located, stale = locate_labels(doc, name)
    bad_input.extend(stale)
    whole = [f for f in doc["files"] or []]
    missing_whole = [f for f in whole if not os.path.isfile(os.path.join(root, f))]
    bad_input.extend("%s: %s is listed under files: but does not exist" % (name, f) for f in missing_whole)
    labelled = sorted({l["path"] for l, _ in located} | (set(whole) - set(missing_whole)))
    sample = unlabelled_sample(root, set(labelled) | set(whole) | {l["path"] for l in doc["labels"] or []},
                               args.unlabelled_sample)
    return {"name": name, "doc": doc, "root": root, "located": located,
            "labelled": labelled, "whole": set(whole), "sample": sample}


def load_repos(args, bad_input):
    repos = []
    for path in label_files_from(args):
        r = load_repo(path, args, bad_input)
        if r is not None:
            repos.append(r)
    return repos


def saved_scan_to_reuse(doc, saved, files, precision_args):
    """The scan saved in `saved` when it is one of these files at this precision and it ran;
    None (and why, on stderr) otherwise."""
    with open(saved) as f:
        reused = json.load(f)
    if reused.get("files") != files or reused.get("precision_args") != precision_args:
        print("score.py: %s: %s was a scan of other files or another precision: scanning again"
              % (doc["repo"], saved), file=sys.stderr)
        return None
    if reused.get("rc") == 2:
        print("score.py: %s: %s is a scan that could not run: scanning again" % (doc["repo"], saved),
              file=sys.stderr)
        return None
    return reused


def scan_and_save(args, r, files, precision_args, help_text, saved):
    """Runs the facts pass and the scan of one repository; keeps the raw scan in `saved` when
    given. Returns (findings, status, notes, rc, wall, command)."""
    doc, root = r["doc"], r["root"]
    r["facts"] = collect_facts(args.mpnanny_check, os.path.join(root, BUILD_FOLDER), root, help_text,
                               args.timeout * 4)
    findings, status, notes, rc, wall, cmd = scan_repo(args, doc, root, files, precision_args)
    if saved:
        os.makedirs(args.scan_dir, exist_ok=True)
        # Written aside and renamed: an interrupted run never leaves half a scan to reuse.
        with open(saved + ".tmp", "w") as f:
            json.dump({"files": files, "precision_args": precision_args, "findings": findings,
                       "status": status, "notes": notes, "rc": rc, "wall": wall, "command": cmd,
                       "facts": r["facts"]}, f)
        os.replace(saved + ".tmp", saved)
    return findings, status, notes, rc, wall, cmd


def score_repo(args, r, dirs_by_generation, help_text, bad_input):
    """Scans one repository (or reuses its saved scan) and matches the findings to its labels,
    into r."""
    doc, root = r["doc"], r["root"]
    files = r["labelled"] + r["sample"]
    torch_dirs, headers_note = headers_for(doc, dirs_by_generation)
    write_compile_db(doc, root, files, torch_dirs, args.extra_flag)
    precision_args = declare_precision(doc, root, help_text)
    print("score.py: %s: scanning %d files (%d labelled or read whole, %d unlabelled sample), precision %s%s, "
          "LibTorch %d.x"
          % (doc["repo"], len(files), len(r["labelled"]), len(r["sample"]), doc["precision"],
             " (declared: %s)" % (" ".join(precision_args) or PROJECT_FILE)
             if doc["precision_how"] == "declared" else " (inferred)", doc["libtorch"]),
          file=sys.stderr, flush=True)
    saved = os.path.join(args.scan_dir, r["name"][:-len(".yaml")] + ".json") if args.scan_dir else None
    reused = None
    if saved and args.reuse_scans and os.path.exists(saved):
        reused = saved_scan_to_reuse(doc, saved, files, precision_args)
    if reused is not None:
        findings, status, notes, rc, wall, cmd = (reused["findings"], reused["status"], reused["notes"],
                                                  reused["rc"], reused["wall"], reused["command"])
        r["facts"] = reused.get("facts")
        notes = notes + ["scan reused from %s" % saved]
    else:
        findings, status, notes, rc, wall, cmd = scan_and_save(args, r, files, precision_args, help_text, saved)
    if headers_note:
        notes = notes + [headers_note]
    r.update(findings_raw=findings, status=status, notes=notes, rc=rc, wall=wall, command=cmd)
    if rc == 2:
        bad_input.append("%s: mpnanny-check exit 2: %s" % (r["name"], notes[0] if notes else ""))
    classified, label_results = match_repo(doc, root, r["located"], findings, r["whole"], set(r["sample"]))
    r["findings"], r["labels"] = classified, label_results
    print("score.py: %s: %s, %d findings, %.1f s" % (doc["repo"], describe_rc(rc), len(findings), wall),
          file=sys.stderr, flush=True)


class Tallies:
    """Every label result and finding of the corpus (each with its repository), and their
    counts per check, per category and per repository, and in total."""

    def __init__(self, repos):
        self.labels = [dict(l, repo=r["doc"]["repo"]) for r in repos for l in r["labels"]]
        self.findings = [dict(f, repo=r["doc"]["repo"]) for r in repos for f in r["findings"]]
        self.per_check = tally(self.labels, self.findings, lambda x: x["check"])
        self.per_category = tally(self.labels, self.findings,
                                  lambda x: x["category"] or ("(other check's line)" if x.get("kind") == "fp_other"
                                                              else "(unlabelled line)"))
        self.per_repo = tally(self.labels, self.findings, lambda x: x["repo"])
        # op-level code and extension kernels (a label's `kind`), each judged on its own labels.
        self.per_kind = tally(self.labels, self.findings, lambda x: x.get("label_kind") or "(unlabelled line)")
        self.total = Counts()
        for c in self.per_check.values():
            self.total.add(c)


def failed_gates(per_check, total, min_recall, max_fp_rate):
    gates = []
    for check in sorted(per_check):
        c = per_check[check]
        if c.flag and c.recall < min_recall:
            gates.append("%s: recall %s < %s" % (check, pct(c.recall), pct(min_recall)))
        if c.fp_rate is not None and c.fp_rate > max_fp_rate:
            gates.append("%s: FP rate %s > %s" % (check, pct(c.fp_rate), pct(max_fp_rate)))
    if total.flag and total.recall < min_recall:
        gates.append("total: recall %s < %s" % (pct(total.recall), pct(min_recall)))
    if total.fp_rate is not None and total.fp_rate > max_fp_rate:
        gates.append("total: FP rate %s > %s" % (pct(total.fp_rate), pct(max_fp_rate)))
    return gates


def print_legend(repos, t, tool):
    print("real-code corpus: %d repositories, %d labels (%d FLAG, %d NO_FLAG), mpnanny-check %s"
          % (len(repos), len(t.labels), t.total.flag, t.total.noflag, tool))
    print("columns: FLAG labels, found (TP), recall; NO_FLAG labels; FP on a NO_FLAG line of the check (FP@NO),")
    print("  on a line labelled for other checks only (other), on an unlabelled line of a file read whole (whole);")
    print("  FP = all three; FP rate = FP / (TP + FP); FP@NO/NO = FP@NO / NO_FLAG labels;")
    print("  unjudged = findings on unlabelled lines of files not read whole (not FP). Same line only.")
    print()


def print_check_and_category_tables(t, gates, no_gate):
    failed_checks = {g.split(":")[0] for g in gates}
    width = max([len(k) for k in t.per_check] + [28])
    print_table("check", width, [(k, t.per_check[k]) for k in sorted(t.per_check)], ("total", t.total),
                extra_head="  gate",
                extras=["  " + ("FAIL" if k in failed_checks else "ok" if not no_gate else "")
                        for k in sorted(t.per_check)])
    width = max([len(k) for k in t.per_category] + [20])
    print_table("category", width, [(k, t.per_category[k]) for k in sorted(t.per_category)], ("total", t.total))
    print_table("kind", width, [(k, t.per_kind[k]) for k in sorted(t.per_kind)], ("total", t.total))


def repo_column_width(repos):
    return max([len(r["doc"]["repo"]) for r in repos] + [23])


def print_repository_table(repos, t):
    rows, extras = [], []
    for r in repos:
        repo = r["doc"]["repo"]
        st = list(r["status"].values())
        ok = sum(1 for s in st if s["status"] == "ok")
        rows.append((repo, t.per_repo.get(repo, Counts())))
        extras.append("  %-13s %-8s %3d/%-3d %7.1f" % (r["doc"]["precision"], r["doc"]["precision_how"],
                                                     ok, len(st), r["wall"]))
    print_table("repository", repo_column_width(repos), rows,
                ("total", t.total, "  %-13s %-8s %7s %7.1f" % ("", "", "", sum(r["wall"] for r in repos))),
                extra_head="  %-13s %-8s %7s %7s" % ("precision", "how", "ok/files", "wall s"), extras=extras)


def print_findings_per_kloc(repos, all_findings):
    """Prints the findings per KLOC of the unlabelled sample; returns ({repo: its numbers},
    {"all"/"fp32": [files, parsed, lines, findings]})."""
    width = repo_column_width(repos)
    head = "%-*s %-13s %7s %7s %8s %8s %8s" % (width, "unlabelled sample", "precision", "files", "parsed", "lines", "findings", "per KLOC")
    print(head)
    print("-" * len(head))
    kloc = {}
    agg = {"all": [0, 0, 0, 0], "fp32": [0, 0, 0, 0]}
    for r in repos:
        repo = r["doc"]["repo"]
        lines = sum(count_lines(os.path.join(r["root"], f)) for f in r["sample"])
        parsed = sum(1 for f in r["sample"] if r["status"].get(f, {}).get("status") == "ok")
        n = sum(1 for f in r["findings"] if f["kind"] == "sample")
        by_check = defaultdict(int)
        for f in r["findings"]:
            if f["kind"] == "sample":
                by_check[f["check"]] += 1
        kloc[repo] = {"precision": r["doc"]["precision"], "files": len(r["sample"]), "parsed_ok": parsed,
                      "lines": lines, "findings": n, "per_kloc": 1000.0 * n / lines if lines else None,
                      "by_check": dict(by_check), "sample": r["sample"]}
        for k in ("all",) + (("fp32",) if r["doc"]["precision"] == "fp32" else ()):
            a = agg[k]
            a[0] += len(r["sample"]); a[1] += parsed; a[2] += lines; a[3] += n
        print("%-*s %-13s %7d %7d %8d %8d %8s" % (width, repo, r["doc"]["precision"], len(r["sample"]), parsed,
                                                  lines, n, "%.2f" % (1000.0 * n / lines) if lines else "-"))
    print("-" * len(head))
    for k, label in (("fp32", "fp32 repos (0 expected)"), ("all", "total")):
        a = agg[k]
        print("%-*s %-13s %7d %7d %8d %8d %8s" % (width, label, "", a[0], a[1], a[2], a[3],
                                                  "%.2f" % (1000.0 * a[3] / a[2]) if a[2] else "-"))
    print("  fp32 repos: the repositories whose code never runs in half; a finding there is wrong.")
    sample_by_check = defaultdict(int)
    for f in all_findings:
        if f["kind"] == "sample":
            sample_by_check[f["check"]] += 1
    if sample_by_check:
        print("  sample findings by check: " + ", ".join("%s %d" % (k, v) for k, v in sorted(sample_by_check.items())))
    other_unlabelled = sum(1 for f in all_findings if f["kind"] in ("unjudged", "outside"))
    print("  findings per KLOC counts the sample files only; the %d unjudged findings elsewhere are in the tables above" % other_unlabelled)
    print()
    return kloc, agg


def print_parse_status(repos, verbose):
    """Prints the files that did not parse cleanly (every file with verbose), each repository's
    notes and facts pass; returns {status: files}."""
    print("parse status (ok / N compile errors (first error) / timeout / crash):")
    counts = defaultdict(int)
    not_checked_total = 0
    for r in repos:
        for f in r["labelled"] + r["sample"]:
            st = r["status"].get(f, {"status": "missing", "detail": "no status"})
            counts[st["status"]] += 1
            not_checked_total += st.get("not_checked_count", 0)
            role = "whole" if f in r["whole"] else "labelled" if f in r["labelled"] else "sample"
            if verbose or st["status"] != "ok" or st.get("not_checked"):
                print("  %s %s [%s]: %s" % (r["doc"]["repo"], f, role, status_text(st)[:400]))
        for n in r["notes"]:
            print("  %s: %s" % (r["doc"]["repo"], n[:600]))
        if r.get("facts"):
            print("  %s: facts pass %s in %.1f s" % (r["doc"]["repo"], describe_rc(r["facts"]["rc"]) if r["facts"]["rc"] is not None else "timeout", r["facts"]["wall_s"]))
    print("  files: %s%s" % (", ".join("%s %d" % (k, v) for k, v in sorted(counts.items())),
                             "; functions not checked: %d" % not_checked_total if not_checked_total else ""))
    print()
    return counts


def print_misses_and_false_positives(all_labels, all_findings):
    print("misses (FLAG labels no finding of their check reached):")
    for l in all_labels:
        if l["verdict"] == "FLAG" and not l["found"]:
            print("  %s %s:%d: %s: %s" % (l["repo"], l["path"], l["line"], l["check"], " ".join(str(l["reason"]).split())[:240]))
    print("false positives:")
    for f in all_findings:
        if f["kind"].startswith("fp_"):
            why = {"fp_noflag": "on a NO_FLAG line", "fp_whole": "on an unlabelled line of a file read whole",
                   "fp_other": "on a line labelled for %s only" % ", ".join(f.get("labelled_for", []))}[f["kind"]]
            print("  %s %s:%d: %s (%s): %s" % (f["repo"], f["path"], f["line"], f["check"], why, f["message"][:240]))
    print("unjudged findings:")
    for f in all_findings:
        if f["kind"] in ("unjudged", "outside", "sample"):
            print("  %s %s:%d: %s [%s]: %s" % (f["repo"], f["path"], f["line"], f["check"], f["kind"], f["message"][:200]))
    print()


def print_closing_lines(args, repos, bad_input, total_wall, gates):
    if bad_input:
        print("bad input (%d):" % len(bad_input))
        for b in bad_input:
            print("  " + b)
    print("wall time: %.1f s (scans: %s)" % (total_wall, ", ".join("%s %.1f s" % (r["doc"]["repo"], r["wall"]) for r in repos)))
    if args.no_gate:
        print("gates: not applied (--no-gate)")
    elif gates:
        print("gates: FAILED (need recall >= %s and FP rate <= %s): %s"
              % (pct(args.min_recall), pct(args.max_fp_rate), "; ".join(gates)))
    else:
        print("gates: met (recall >= %s, FP rate <= %s, per check and in total)" % (pct(args.min_recall), pct(args.max_fp_rate)))


def json_document(args, dirs_by_generation, total_wall, repos, t, kloc, agg, parse_counts, gates, bad_input, code):
    return {
        "mpnanny_check": args.mpnanny_check, "system_include": {"libtorch %d" % g: d for g, d in dirs_by_generation.items()}, "wall_s": round(total_wall, 1),
        "settings": {k: getattr(args, k) for k in ("unlabelled_sample", "jobs", "timeout", "no_cache",
                                                   "min_recall", "max_fp_rate", "no_gate")},
        "per_check": {k: v.as_dict() for k, v in sorted(t.per_check.items())},
        "per_category": {k: v.as_dict() for k, v in sorted(t.per_category.items())},
        "per_kind": {k: v.as_dict() for k, v in sorted(t.per_kind.items())},
        "per_repo": {r["doc"]["repo"]: dict(t.per_repo.get(r["doc"]["repo"], Counts()).as_dict(),
                                            precision=r["doc"]["precision"],
                                            precision_how=r["doc"]["precision_how"],
                                            wall_s=round(r["wall"], 1), rc=r["rc"], command=r["command"],
                                            facts=r.get("facts"), notes=r["notes"],
                                            files={f: dict(r["status"].get(f, {}),
                                                           role="whole" if f in r["whole"] else
                                                           "labelled" if f in r["labelled"] else "sample")
                                                   for f in r["labelled"] + r["sample"]})
                     for r in repos},
        "kloc": kloc,
        "kloc_total": dict(zip(("files", "parsed_ok", "lines", "findings"), agg["all"])),
        "kloc_fp32": dict(zip(("files", "parsed_ok", "lines", "findings"), agg["fp32"])),
        "totals": t.total.as_dict(),
        "parse_status": dict(parse_counts),
        "gates_failed": gates,
        "bad_input": bad_input,
        "labels": t.labels,
        "findings": t.findings,
        "exit": code,
    }


def main(argv=None):
    args = parse_args(argv)
    L.SRC = os.path.abspath(args.src)  # labels.locate() reads the sources from here
    tool = os.path.abspath(args.mpnanny_check)
    if not os.access(tool, os.X_OK):
        print("score.py: no mpnanny-check at %s" % tool, file=sys.stderr)
        return 2
    args.mpnanny_check = tool
    help_text = checker_help(tool)
    dirs_by_generation = system_include_dirs(args)

    bad_input = []   # label files that do not load, stale labels, missing repositories
    wall_start = time.time()
    repos = load_repos(args, bad_input)
    for r in repos:
        score_repo(args, r, dirs_by_generation, help_text, bad_input)
    total_wall = time.time() - wall_start

    t = Tallies(repos)
    gates = [] if args.no_gate else failed_gates(t.per_check, t.total, args.min_recall, args.max_fp_rate)
    print_legend(repos, t, tool)
    print_check_and_category_tables(t, gates, args.no_gate)
    print_repository_table(repos, t)
    kloc, agg = print_findings_per_kloc(repos, t.findings)
    parse_counts = print_parse_status(repos, args.verbose)
    if args.verbose:
        print_misses_and_false_positives(t.labels, t.findings)
    print_closing_lines(args, repos, bad_input, total_wall, gates)
    code = 2 if bad_input else 1 if gates else 0

    if args.json_out:
        out = json_document(args, dirs_by_generation, total_wall, repos, t, kloc, agg, parse_counts, gates, bad_input, code)
        with open(args.json_out, "w") as f:
            json.dump(out, f, indent=1, default=str)
            f.write("\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
