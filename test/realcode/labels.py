#!/usr/bin/env python3
"""The real-code corpus's label files: loading, validation and line hashes.

A label file (labels/OWNER+NAME.yaml, format in README.md) names a repository at a pinned
commit, how a user would scan it (precision, include folders), the files read whole, and
one label per line. A line is identified by its path, its number and a hash of its text,
so a line that moved is found again (nearest line with that hash) and one whose text
changed is reported, never silently mislabelled.

    labels.py hash OWNER/NAME PATH LINE   print the line's text and hash
    labels.py check [LABEL_FILE ...]      validate label files against the extracted sources
"""
import hashlib
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MPNANNY_REALCODE_SRC", os.path.join(HERE, "src"))
LABELS = os.path.join(HERE, "labels")
CHECKS = {
    "mpnanny-autocast-cache", "mpnanny-clip-before-unscale", "mpnanny-fp16-constant-range",
    "mpnanny-grad-scaler-config", "mpnanny-log-softmax", "mpnanny-loss-in-half",
    "mpnanny-master-weights", "mpnanny-missing-grad-scaler", "mpnanny-naive-softmax",
    "mpnanny-norm-in-half", "mpnanny-risky-op", "mpnanny-softmax-dtype", "mpnanny-unsafe-math",
    "mpnanny-unscaled-sum",
    # The kernel checks (issue 47): half/bf16 arithmetic inside extension kernels.
    "mpnanny-kernel-constant-range", "mpnanny-kernel-half-accumulator", "mpnanny-kernel-half-atomic",
    "mpnanny-kernel-half-overflow",
}
PRECISIONS = {"fp32", "fp16", "bf16", "autocast-fp16", "autocast-bf16"}
# The LibTorch generation a project's code is written against (`libtorch:` in its label
# file): 2 for code that calls what 1.13's headers lack (set_autocast_enabled(device, on), ...).
LIBTORCH_GENERATIONS = {1, 2}
VERDICTS = {"FLAG", "NO_FLAG"}
# What a label is about: op-level code (torch:: ops, the training step) or the arithmetic of an
# extension kernel (a C++ CPU or CUDA kernel); optional, op when absent.
KINDS = {"op", "kernel"}
# When a label was written (`made:`), in UTC to the minute: the proof, with the git history, that
# it was written before the checker ran on its file.
MADE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z")


class LabelError(Exception):
    pass


def line_hash(text):
    """sha1 of the line without any whitespace, first 12 hex digits."""
    return hashlib.sha1(re.sub(r"\s+", "", text).encode("utf-8")).hexdigest()[:12]


def repo_dir(repo):
    return os.path.join(SRC, repo.replace("/", "+"))


def read_lines(repo, path):
    full = os.path.join(repo_dir(repo), path)
    with open(full, encoding="utf-8", errors="replace") as f:
        return f.read().split("\n")


def locate(repo, label, cache=None):
    """The 1-based line the label points at now: its own line when the hash matches, else
    the nearest line with that hash. None when no line has it."""
    key = (repo, label["path"])
    lines = cache.get(key) if cache is not None else None
    if lines is None:
        lines = read_lines(repo, label["path"])
        if cache is not None:
            cache[key] = lines
    want = label["hash"]
    line = label["line"]
    if 1 <= line <= len(lines) and line_hash(lines[line - 1]) == want:
        return line
    hits = [i + 1 for i, t in enumerate(lines) if line_hash(t) == want]
    if not hits:
        return None
    return min(hits, key=lambda n: abs(n - line))


def statement_span(lines, line, limit=12):
    """The lines (1-based) of the statement that starts on `line`: a call written over several
    lines (`return F::normalize(\n    h, Options().dim(1));`) is one statement, and a finding
    may point at any of its lines (the call, the argument that holds the constant). The
    statement ends on the first line where its parentheses and brackets close again."""
    depth = 0
    for n in range(line, min(len(lines), line + limit - 1) + 1):
        code = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//.*', "", lines[n - 1])
        depth += code.count("(") + code.count("[") - code.count(")") - code.count("]")
        if depth <= 0:
            return range(line, n + 1)
    return range(line, line + 1)


REQUIRED_TOP = ("repo", "commit", "precision", "precision_how", "precision_why", "labels")
REQUIRED_LABEL = ("path", "line", "hash", "verdict", "check", "category", "reason")


def load(path):
    """A validated label file as a dict; LabelError names the file and the entry."""
    with open(path, encoding="utf-8") as f:
        try:
            doc = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise LabelError("%s: %s" % (path, e))
    where = os.path.relpath(path)
    if not isinstance(doc, dict):
        raise LabelError("%s: not a mapping" % where)
    for key in REQUIRED_TOP:
        if key not in doc:
            raise LabelError("%s: missing '%s'" % (where, key))
    if doc["precision"] not in PRECISIONS:
        raise LabelError("%s: precision '%s' is not one of %s" % (where, doc["precision"], sorted(PRECISIONS)))
    if doc["precision_how"] not in ("declared", "inferred"):
        raise LabelError("%s: precision_how must be 'declared' or 'inferred'" % where)
    if doc.setdefault("libtorch", 1) not in LIBTORCH_GENERATIONS:
        raise LabelError("%s: libtorch '%s' is not one of %s" % (where, doc["libtorch"], sorted(LIBTORCH_GENERATIONS)))
    doc.setdefault("include", [])
    doc.setdefault("defines", [])
    doc.setdefault("std", "c++17")
    doc.setdefault("files", [])
    seen = set()
    for i, label in enumerate(doc["labels"] or []):
        at = "%s: label %d" % (where, i + 1)
        if not isinstance(label, dict):
            raise LabelError("%s: not a mapping" % at)
        for key in REQUIRED_LABEL:
            if key not in label:
                raise LabelError("%s: missing '%s'" % (at, key))
        at = "%s (%s:%s)" % (at, label["path"], label["line"])
        if label["verdict"] not in VERDICTS:
            raise LabelError("%s: verdict '%s' is not FLAG or NO_FLAG" % (at, label["verdict"]))
        if label["check"] not in CHECKS:
            raise LabelError("%s: check '%s' is not an mpnanny check" % (at, label["check"]))
        if not re.fullmatch(r"[0-9a-f]{12}", str(label["hash"])):
            raise LabelError("%s: hash must be 12 hex digits" % at)
        if label.setdefault("kind", "op") not in KINDS:
            raise LabelError("%s: kind '%s' is not one of %s" % (at, label["kind"], sorted(KINDS)))
        # PyYAML reads an unquoted timestamp as a datetime: the text is what is checked.
        if label["kind"] == "kernel" and "made" not in label:
            raise LabelError("%s: a kernel label says when it was made (made: 2026-12-07T23:55Z)" % at)
        if "made" in label and not MADE.fullmatch(str(label["made"])):
            raise LabelError("%s: made '%s' is not a UTC time like 2026-12-07T23:55Z" % (at, label["made"]))
        # what_if: a hazard only if this fp32 code ran in half (a port); never one at the file's precision.
        if not isinstance(label.setdefault("what_if", False), bool):
            raise LabelError("%s: what_if must be true or false" % at)
        if label["what_if"] and (label["verdict"] != "FLAG" or doc["precision"] != "fp32"):
            raise LabelError("%s: what_if is for a FLAG label in fp32 code" % at)
        if len(str(label["reason"]).strip()) < 20:
            raise LabelError("%s: the reason must say why (cite the kernel or the number)" % at)
        key = (label["path"], label["line"], label["check"])
        if key in seen:
            raise LabelError("%s: labelled twice for %s" % (at, label["check"]))
        seen.add(key)
    return doc


def all_label_files():
    return sorted(os.path.join(LABELS, n) for n in os.listdir(LABELS) if n.endswith(".yaml"))


def main(argv):
    if len(argv) >= 2 and argv[1] == "hash" and len(argv) == 5:
        repo, path, line = argv[2], argv[3], int(argv[4])
        text = read_lines(repo, path)[line - 1]
        print("%s\t%s" % (line_hash(text), text.strip()))
        return 0
    if len(argv) >= 2 and argv[1] == "check":
        files = argv[2:] or all_label_files()
        bad = 0
        for path in files:
            try:
                doc = load(path)
            except LabelError as e:
                print(e)
                bad += 1
                continue
            cache = {}
            for label in doc["labels"] or []:
                try:
                    now = locate(doc["repo"], label, cache)
                except OSError as e:
                    print("%s: %s:%s: %s" % (os.path.relpath(path), label["path"], label["line"], e))
                    bad += 1
                    continue
                if now is None:
                    print("%s: %s:%s: no line has hash %s (the text changed: relabel it)"
                          % (os.path.relpath(path), label["path"], label["line"], label["hash"]))
                    bad += 1
                elif now != label["line"]:
                    print("%s: %s:%s: moved to line %d" % (os.path.relpath(path), label["path"], label["line"], now))
            flags = sum(1 for l in doc["labels"] or [] if l["verdict"] == "FLAG")
            print("%s: %d labels (%d FLAG, %d NO_FLAG)" % (os.path.relpath(path), len(doc["labels"] or []),
                                                           flags, len(doc["labels"] or []) - flags))
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
