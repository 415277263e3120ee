#!/usr/bin/env python3
"""Self-test of score.py, without the corpus's sources (CI has no network and no mirror).

Copies the made-up repository of fixture/ (three short .cpp files on the mock LibTorch
headers, a label file whose verdicts are chosen to reach every path of the matching) into a
work folder, scores it with the real mpnanny-check, and asserts the numbers: recall, each
kind of false positive, unjudged findings, findings per KLOC, parse status, the compile
database, the precision declaration and the exit codes (1: gates fail, 0: --no-gate,
2: a label whose text changed). Exit 77 (skipped) when PyYAML is missing.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = "mpnanny/realcode-fixture"
KEY = "mpnanny+realcode-fixture"
# Only the checks the fixture is about: another check firing on its lines is not the
# scorer's business (and would change the counts for a reason this test does not test).
CHECKS = "--checks=-*,mpnanny-fp16-constant-range,mpnanny-log-softmax,mpnanny-unsafe-math"

failures = []


def expect(what, got, want):
    if isinstance(want, float) and isinstance(got, (int, float)):
        ok = abs(got - want) < 1e-9
    else:
        ok = got == want
    print("%s %s: %r%s" % ("ok  " if ok else "FAIL", what, got, "" if ok else " (want %r)" % (want,)))
    if not ok:
        failures.append(what)


def score(args, work, extra, env_paths=False, name="run"):
    out_json = os.path.join(work, name + ".json")
    cmd = [sys.executable, os.path.join(HERE, "score.py"), "--mpnanny-check", args.mpnanny_check,
           "--torch-include", args.mock, "--cuda-include", "none", "--no-cache", "-j", "2",
           "--timeout", "120", "--checker-arg=" + CHECKS, "--verbose", "--json-out", out_json] + extra
    env = dict(os.environ)
    labels, src = os.path.join(work, "fixture", "labels"), os.path.join(work, "fixture", "src")
    if env_paths:  # the same folders through the environment
        env.update(MPNANNY_REALCODE_LABELS=labels, MPNANNY_REALCODE_SRC=src)
    else:
        env.pop("MPNANNY_REALCODE_LABELS", None)
        env.pop("MPNANNY_REALCODE_SRC", None)
        cmd += ["--labels-dir", labels, "--src", src]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    print("$ " + " ".join(cmd))
    print(proc.stdout)
    data = None
    if os.path.exists(out_json):
        with open(out_json) as f:
            data = json.load(f)
    return proc.returncode, proc.stdout, data


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpnanny-check", required=True)
    ap.add_argument("--mock", required=True, help="test/checks/Inputs/mock")
    ap.add_argument("--work", required=True, help="a scratch folder (emptied first)")
    return ap.parse_args()


def check_compile_args():
    # Imported here, after main's PyYAML check: score.py loads labels.py, which needs it.
    import score as S
    doc = {"std": "c++20", "include": ["inc", "."], "defines": ["USE_CUDA", "X=2"]}
    a = S.compile_args(doc, "/r", "k/attn.cu", ["/t/api", "/usr/include"], [])
    expect("compile_args of a .cu file", a, ["c++", "-std=c++20", "-I/r/inc", "-I/r", "-DUSE_CUDA", "-DX=2",
                                             "-isystem", "/t/api", "-x", "c++", "-c", "/r/k/attn.cu"])
    expect("compile_args of a header ends with -x c++ -c FILE", S.compile_args(doc, "/r", "a.hpp", [], [])[-4:],
           ["-x", "c++", "-c", "/r/a.hpp"])
    expect("compile_args of a .cpp has no -x", "-x" in S.compile_args(doc, "/r", "a.cpp", [], []), False)


def check_headers_by_generation():
    import score as S
    both = {1: ["/t1"], 2: ["/t2"]}
    expect("a project written for 2.x gets 2.x's headers", S.headers_for({"libtorch": 2}, both), (["/t2"], None))
    expect("a project with no libtorch key gets the default headers", S.headers_for({}, both), (["/t1"], None))
    dirs, note = S.headers_for({"libtorch": 2}, {1: ["/t1"]})
    expect("without 2.x's headers, the default ones", dirs, ["/t1"])
    expect("... and a note that says so", "written for LibTorch 2.x" in (note or ""), True)


def check_statement_span():
    import labels as L
    source = ["  return torch::nn::functional::normalize(",
              "      h, Options().p(2).dim(1));  // (a comment's ')' does not count",
              "  auto x = f(a)[0];", "  if (ok) {", "    g(\")\");"]
    expect("a call over two lines spans both", list(L.statement_span(source, 1)), [1, 2])
    expect("a one-line statement spans one line", list(L.statement_span(source, 3)), [3])
    expect("a block opener spans its line only", list(L.statement_span(source, 4)), [4])
    expect("a ')' in a string does not count", list(L.statement_span(source, 5)), [5])


def check_per_check_counts(d):
    c = d["per_check"]
    cr, ls, um = (c.get("mpnanny-fp16-constant-range", {}), c.get("mpnanny-log-softmax", {}),
                  c.get("mpnanny-unsafe-math", {}))
    # fp16-constant-range: TP on model.cpp:6; FP on the NO_FLAG line 9; FP on line 10 (labelled
    # for log-softmax only); train.cpp:7 is unjudged (not read whole); -1e4 (line 7) is quiet.
    for k, v in (("flag", 1), ("found", 1), ("noflag", 2), ("fp_noflag", 1), ("fp_other", 1),
                 ("fp_whole", 0), ("fp", 2), ("unjudged", 1)):
        expect("constant-range " + k, cr.get(k), v)
    expect("constant-range recall", cr.get("recall"), 1.0)
    expect("constant-range FP rate", cr.get("fp_rate"), 2 / 3)
    expect("constant-range FP@NO / NO_FLAG", cr.get("fp_on_noflag_per_noflag"), 0.5)
    # log-softmax: TP on train.cpp:6 (label written for line 4: the moved line is found), miss
    # on model.cpp:10, FP on model.cpp:8 (unlabelled line of a file read whole).
    for k, v in (("flag", 2), ("found", 1), ("fp_whole", 1), ("fp", 1), ("unjudged", 0)):
        expect("log-softmax " + k, ls.get(k), v)
    expect("log-softmax recall", ls.get("recall"), 0.5)
    expect("log-softmax FP rate", ls.get("fp_rate"), 0.5)
    expect("unsafe-math recall (a FLAG, no finding)", um.get("recall"), 0.0)
    expect("unsafe-math FP rate (no finding)", um.get("fp_rate"), None)


def check_totals_and_categories(d):
    t = d["totals"]
    for k, v in (("flag", 4), ("found", 2), ("noflag", 2), ("fp", 3), ("unjudged", 1)):
        expect("total " + k, t.get(k), v)
    expect("total recall", t.get("recall"), 0.5)
    expect("total FP rate", t.get("fp_rate"), 0.6)
    cat = d["per_category"]
    expect("category mask-constant", {k: cat.get("mask-constant", {}).get(k) for k in ("flag", "found", "noflag", "fp_noflag")},
           {"flag": 1, "found": 1, "noflag": 2, "fp_noflag": 1})
    expect("category log-of-softmax", {k: cat.get("log-of-softmax", {}).get(k) for k in ("flag", "found")},
           {"flag": 2, "found": 1})
    expect("category domain", {k: cat.get("domain", {}).get(k) for k in ("flag", "found")}, {"flag": 1, "found": 0})
    # The fixture's labels say no kind: they are op-level labels, tallied under "op".
    kinds = d["per_kind"]
    expect("kind op", {k: kinds.get("op", {}).get(k) for k in ("flag", "found", "noflag")},
           {"flag": 4, "found": 2, "noflag": 2})
    expect("no kernel kind without kernel labels", "kernel" in kinds, False)
    labels = {(l["path"], l["check"]): l for l in d["labels"]}
    expect("label results carry their kind", labels[("src/train.cpp", "mpnanny-log-softmax")]["label_kind"], "op")
    expect("moved label located at its text", labels[("src/train.cpp", "mpnanny-log-softmax")]["line"], 6)


def check_kloc_and_parse_status(d, root):
    # findings per KLOC: util.cpp is the only unlabelled LibTorch source; 2 findings there.
    k = d["kloc"][REPO]
    lines = len(open(os.path.join(root, "src", "util.cpp")).read().splitlines())
    expect("sample files", k["sample"], ["src/util.cpp"])
    expect("sample lines", k["lines"], lines)
    expect("sample findings", k["findings"], 2)
    expect("findings per KLOC", k["per_kloc"], 2000.0 / lines)
    # parse status per file
    files = d["per_repo"][REPO]["files"]
    expect("model.cpp parse status", files["src/model.cpp"].get("status"), "ok")
    expect("model.cpp role", files["src/model.cpp"].get("role"), "whole")
    expect("train.cpp role", files["src/train.cpp"].get("role"), "labelled")
    expect("util.cpp parse status", (files["src/util.cpp"].get("status"), files["src/util.cpp"].get("errors")), ("errors", 1))
    expect("util.cpp first error named", "fixture_undeclared_symbol" in files["src/util.cpp"].get("detail", ""), True)


def check_scan_as_a_user_runs_it(d, root, mock):
    """The scan as a user runs it: its compile database, the declared precision."""
    with open(os.path.join(root, ".mpnanny-build", "compile_commands.json")) as f:
        db = {os.path.relpath(e["file"], root): e for e in json.load(f)}
    expect("compile database files", sorted(db), ["src/model.cpp", "src/train.cpp", "src/util.cpp"])
    args_model = db["src/model.cpp"]["arguments"]
    expect("compile flags", [a for a in args_model if a.startswith(("-std", "-I", "-D"))],
           ["-std=c++17", "-I" + os.path.join(root, "src"), "-DMPNANNY_FIXTURE=1"])
    expect("mock headers as LibTorch's", args_model[args_model.index("-isystem") + 1], os.path.abspath(mock))
    expect("compile directory", db["src/model.cpp"]["directory"], root)
    command = d["per_repo"][REPO]["command"]
    declared = "--precision=fp16" in command or os.path.exists(os.path.join(root, ".mpnanny.yaml"))
    expect("precision declared (--precision or .mpnanny.yaml)", declared, True)


def check_label_fields(work):
    """made/kind/what_if: validated by labels.load; a what_if label is quiet at the true precision."""
    import yaml
    import labels as L
    import score as S
    L.SRC = os.path.join(work, "fixture", "src")
    label = {"path": "src/model.cpp", "line": 6, "hash": "837970287377", "verdict": "FLAG",
             "check": "mpnanny-fp16-constant-range", "category": "mask-constant",
             "reason": "what-if: -1e9 is past fp16's -65504 if this fp32 code ran in half",
             "made": "2026-12-07T23:55Z", "kind": "op", "what_if": True}
    doc = {"repo": REPO, "commit": "fixture", "precision": "fp32", "precision_how": "inferred",
           "precision_why": "fixture", "labels": [label]}

    def load(d):
        path = os.path.join(work, "fields.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(d, f)
        try:
            return L.load(path)
        except L.LabelError as e:
            return str(e)

    loaded = load(doc)
    expect("made/kind/what_if accepted", isinstance(loaded, dict), True)
    located, stale = S.locate_labels(loaded, "fields.yaml")
    expect("a what_if FLAG counts as NO_FLAG at the true precision", [l["verdict"] for l, _ in located], ["NO_FLAG"])
    for field, value, words in (("made", "07/12/2026 23:55", "not a UTC time"), ("kind", "cuda", "kind 'cuda'"),
                                ("what_if", "yes", "what_if must be")):
        bad = dict(doc, labels=[dict(label, **{field: value})])
        expect("bad %s rejected" % field, words in str(load(bad)), True)
    expect("what_if in fp16 code rejected", "what_if is for" in str(load(dict(doc, precision="fp16"))), True)


def check_stale_label(args, work):
    path = os.path.join(work, "fixture", "labels", KEY + ".yaml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("hash: 3cf864f7a200", "hash: deadbeef0000"))
    rc, out, d3 = score(args, work, [], name="stale")
    expect("exit code with a stale label", rc, 2)
    expect("stale label listed", "src/model.cpp:7: no line has hash deadbeef0000" in out, True)


def check_label_kind_and_made(work):
    """A label's kind is op or kernel (op when absent); a kernel label says when it was made,
    as a UTC minute."""
    import labels as L
    head = ("repo: o/n\ncommit: c\nprecision: fp16\nprecision_how: inferred\nprecision_why: w\nlabels:\n"
            "  - {path: a.cu, line: 1, hash: 0123456789ab, verdict: FLAG, check: mpnanny-kernel-half-atomic,\n"
            "     category: half-atomic, reason: an atomicAdd into a half buffer from many threads")

    def load(extra):
        path = os.path.join(work, "kind.yaml")
        with open(path, "w") as f:
            f.write(head + extra + "}\n")
        try:
            return L.load(path)["labels"][0]
        except L.LabelError as e:
            return str(e)

    expect("a label without kind is op", load("")["kind"], "op")
    expect("a kernel label with its UTC minute loads", load(', kind: kernel, made: "2026-12-07T23:55Z"')["made"],
           "2026-12-07T23:55Z")
    expect("a kernel label without made is refused", "says when it was made" in load(", kind: kernel"), True)
    expect("made must be a UTC time", "not a UTC time" in load(', kind: kernel, made: "07/12/2026"'), True)
    expect("kind must be op or kernel", "is not one of" in load(", kind: cuda"), True)


def main():
    args = parse_args()
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("PyYAML is missing: skipped")
        return 77

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "fixture"), os.path.join(work, "fixture"))
    root = os.path.join(work, "fixture", "src", KEY)

    # --- the compile commands, unit by unit ---
    sys.path.insert(0, HERE)
    check_compile_args()
    check_headers_by_generation()

    # --- a label names a statement: a finding on any of its lines is matched to it ---
    check_statement_span()
    check_label_fields(work)

    # --- the label fields of kernel labels ---
    check_label_kind_and_made(work)

    # --- the whole fixture, options for the folders ---
    rc, text, d = score(args, work, [], name="gated")
    expect("exit code with the default gates", rc, 1)
    if d is None:
        print("no JSON written")
        return 1
    check_per_check_counts(d)
    check_totals_and_categories(d)
    check_kloc_and_parse_status(d, root)
    check_scan_as_a_user_runs_it(d, root, args.mock)
    expect("no bad input", d["bad_input"], [])

    # --- the same through the environment, only reporting ---
    rc, text, d2 = score(args, work, ["--no-gate"], env_paths=True, name="nogate")
    expect("exit code with --no-gate", rc, 0)
    expect("same totals through MPNANNY_REALCODE_*", d2 and d2["totals"], d["totals"])

    # --- a label whose text changed: bad input, listed ---
    check_stale_label(args, work)

    if failures:
        print("test_score: %d assertion(s) failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    print("test_score: all assertions hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
