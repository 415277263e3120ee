#!/usr/bin/env python3
"""End-to-end site verification: scan, train with MPNANNY_VERIFY=1, check the verdicts.

Usage: run_e2e.py --check MPNANNY_CHECK --example TRAIN_ATTENTION --without-nanny PROGRAM
                  --source-dir SRC --build-dir BUILD --work DIR GROUP
GROUP: verify_example | verify_example_fp16 | verify_without_nanny | verify_steps | bad_sites_files
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys

from e2e_support import FAILURES, exit_code, expect, fresh


def train(program, work, sites, steps, extra_env=None, extra_args=()):
    """Runs a training program in `work` with verification on; returns (returncode, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPNANNY_")}
    env.update({"MPNANNY_VERIFY": "1", "MPNANNY_SITES": sites, "MPNANNY_DIR": os.path.join(work, "nanny_logs")})
    env.update(extra_env or {})
    result = subprocess.run([program, str(steps)] + list(extra_args), cwd=work, env=env, capture_output=True, text=True, timeout=240)
    sys.stderr.write(result.stderr)
    return result.returncode, result.stderr


def verdicts(work):
    """site_id -> row of site_verdicts (the newest run), or None when the table is absent."""
    path = os.path.join(work, "nanny_logs", "metrics.db")
    if not os.path.exists(path):
        return None
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'site_verdicts'").fetchone():
        return None
    run = db.execute("SELECT MAX(run_id) FROM runs").fetchone()[0]
    return {r["site_id"]: dict(r) for r in db.execute("SELECT * FROM site_verdicts WHERE run_id = ?", (run,))}


def query(work, sql):
    db = sqlite3.connect(os.path.join(work, "nanny_logs", "metrics.db"))
    return db.execute(sql).fetchall()


def marked_line(source, marker):
    with open(source) as f:
        for number, text in enumerate(f, 1):
            if marker in text:
                return number
    raise SystemExit("no line with %r in %s" % (marker, source))


def site(source, marker, expression, ops, risk, site_id, line_offset=0):
    return {"id": site_id, "check": "mpnanny-test", "severity": "warning", "file": source,
            "line": marked_line(source, marker) + line_offset, "column": 1, "function": "main",
            "expression": expression, "aten_ops": ops, "risk": risk, "precision": "fp16"}


def write_sites(path, sites):
    with open(path, "w") as f:
        json.dump({"schema_version": 1, "generated_by": "run_e2e.py", "sites": sites}, f, indent=1)
    return path


def without_nanny_sites(args, line_offset=0):
    source = os.path.join(args.source_dir, "test", "e2e", "train_without_nanny.cpp")
    return [
        site(source, "site: overflow", "torch::exp(h.abs() * 0.0 + exponent)", ["aten::exp"], "overflow", "e2e-exp",
             line_offset),
        site(source, "site: healthy", "torch::softmax(h, -1)", ["aten::softmax", "aten::_softmax"], "precision-loss",
             "e2e-softmax"),
        site(source, "site: never taken", "torch::log(probabilities)", ["aten::log"], "domain", "e2e-log"),
    ]


def count(text, needle):
    return text.count(needle)


def scan_example(args, work):
    """mpnanny-check --export-sites on the bundled example: (sites file, sites, line -> text)."""
    sites_path = os.path.join(work, "mpnanny-sites.json")
    source = os.path.join(args.source_dir, "examples", "train_attention.cpp")
    scan = subprocess.run([args.check, "-p", args.build_dir, source, "--export-sites=" + sites_path],
                          capture_output=True, text=True, timeout=280)
    expect(scan.returncode in (0, 1), "scan exit code %d: %s" % (scan.returncode, scan.stderr[-2000:]))
    with open(sites_path) as f:
        sites = json.load(f)["sites"]
    with open(source) as f:
        lines = f.read().split("\n")
    return sites_path, sites, lambda s: lines[s["line"] - 1]


def verify_example(args):
    """The README's story on the bundled example: scan, train 3 steps, read the verdicts."""
    work = fresh(os.path.join(args.work, "verify_example"))
    sites_path, sites, text_of = scan_example(args, work)
    mask = [s for s in sites if s["check"] == "mpnanny-fp16-constant-range" and "masked_fill" in text_of(s)]
    softmax = [s for s in sites if s["check"] == "mpnanny-softmax-dtype" and "softmax(scores" in text_of(s)]
    manual = [s for s in sites if "torch::log(torch::softmax(logits" in text_of(s)]
    scaler = [s for s in sites if s["check"] == "mpnanny-missing-grad-scaler"]
    expect(len(mask) == 1, "one masked_fill(-1e9) site, got %s" % mask)
    # Attention weights in fp16 are no hazard (a weight rounded to 0 adds nothing to the
    # weighted sum): softmax-dtype reports probabilities that reach a cumsum, a division or
    # a comparison, and this one reaches a matmul.
    expect(softmax == [], "no softmax site in the attention block (attention weights), got %s" % softmax)
    expect(len(manual) >= 1, "the hand-written loss (EXAMPLE_LOSS=manual) is flagged")
    if FAILURES:
        return

    code, stderr = train(args.example, work, sites_path, 3)
    expect(code == 0, "training exits 0, got %d" % code)
    expect(count(stderr, "mpnanny site verification:") == 1, "one verdict table on stderr")
    found = verdicts(work)
    expect(found is not None and set(found) == {s["id"] for s in sites}, "one verdict per site in site_verdicts")
    if not found:
        return
    # One run: the example's own Nanny took over the session MPNANNY_VERIFY=1 started at load time.
    expect(query(work, "SELECT COUNT(*) FROM runs") == [(1,)], "one run in metrics.db")

    m = found[mask[0]["id"]]
    expect(m["verdict"] == "CONFIRMED", "masked_fill(-1e9) is CONFIRMED: %s" % m)
    expect(m["first_step"] == 0 and m["value"] == 1e9, "confirmed at step 0 with value 1e9: %s" % m)
    expect(m["evidence"] == "max |x| = 1e+09 > 65504 (fp16 max) at step 0", "evidence: %s" % m["evidence"])
    row = "CONFIRMED    train_attention.cpp:%d" % mask[0]["line"]
    expect(row in stderr, "the table shows %r" % row)

    # loss.backward() without loss scaling: its check names no op; the backward pass it starts
    # shows gradients that fp16 flushes to 0.
    for n in scaler:
        v = found[n["id"]]
        expect(v["verdict"] == "CONFIRMED" and v["first_step"] == 0 and "flush to 0 in fp16" in v["evidence"],
               "the missing grad scaler is CONFIRMED by underflowing gradients: %s" % v)
    for n in manual:
        v = found[n["id"]]
        expect(v["verdict"] == "NOT_REACHED" and v["steps_observed"] == 0, "the untaken branch is NOT_REACHED: %s" % v)


def verify_example_fp16(args):
    """The example trained in fp16 on the CPU (LibTorch 2.x): the mask overflow is confirmed by
    what fp16 itself did, not predicted from fp32 headroom. masked_fill(-1e9) on an fp16 tensor
    raises in LibTorch, so the run stops at step 0 with that error, and the verdict says so."""
    major = int((args.torch_version or "0").split(".")[0] or 0)
    if major < 2:
        print("SKIPPED: LibTorch %s computes no fp16 matmul on the CPU ('addmm_impl_cpu_' not implemented "
              "for 'Half'); verify_example predicts the overflow from the fp32 run instead" % args.torch_version)
        return
    work = fresh(os.path.join(args.work, "verify_example_fp16"))
    sites_path, sites, text_of = scan_example(args, work)
    mask = [s for s in sites if s["check"] == "mpnanny-fp16-constant-range" and "masked_fill" in text_of(s)]
    expect(len(mask) == 1, "one masked_fill(-1e9) site, got %s" % mask)
    if FAILURES:
        return
    code, stderr = train(args.example, work, sites_path, 3, {"EXAMPLE_DTYPE": "fp16"})
    expect(code == 1, "the fp16 run stops with an error, got exit code %d" % code)
    expect("training stopped at step 0: value cannot be converted to type at::Half without overflow" in stderr,
           "LibTorch's own fp16 error ends the run at step 0")
    found = verdicts(work) or {}
    m = found.get(mask[0]["id"], {})
    expect(m.get("verdict") == "CONFIRMED" and m.get("first_step") == 0 and m.get("value") == 1e9,
           "masked_fill(-1e9) is CONFIRMED at step 0 in fp16: %s" % m)
    expect(m.get("evidence") == "observed in fp16: aten::masked_fill raised on a tensor in fp16, its value -1e+09 "
                                "being beyond 65504 (fp16 max) at step 0", "fp16 evidence: %s" % m.get("evidence"))
    expect(("CONFIRMED    train_attention.cpp:%d" % mask[0]["line"]) in stderr, "the table shows the site")
    # The ops before the fill ran in fp16: LibTorch 2.x's CPU kernels, not an fp32 dry run.
    expect(query(work, "SELECT DISTINCT dtype FROM tensor_stats WHERE op = 'aten::linear' OR op = 'aten::addmm'")
           in ([("Half",)], []), "the linear layers computed in fp16")


def verify_without_nanny(args):
    """No Nanny in the program: the runtime's initializer verifies, and steps are backward passes."""
    work = fresh(os.path.join(args.work, "verify_without_nanny"))
    sites = write_sites(os.path.join(work, "sites.json"), without_nanny_sites(args))
    code, stderr = train(args.without_nanny, work, sites, 4)
    expect(code == 0, "training exits 0, got %d" % code)
    expect(count(stderr, "mpnanny site verification:") == 1, "one verdict table at exit")
    found = verdicts(work) or {}
    exp, softmax, log = found.get("e2e-exp", {}), found.get("e2e-softmax", {}), found.get("e2e-log", {})
    expect(exp.get("verdict") == "CONFIRMED" and exp.get("first_step") == 0, "exp(12) CONFIRMED at step 0: %s" % exp)
    expect(abs((exp.get("value") or 0) - 162754.79) < 1, "with its value e^12: %s" % exp)
    expect(exp.get("evidence", "").startswith("max |x| = 162755 > 65504 (fp16 max) at step 0"), "evidence: %s" % exp)
    expect(softmax.get("verdict") == "NOT_OBSERVED" and softmax.get("steps_observed") == 4,
           "softmax NOT_OBSERVED on all 4 steps: %s" % softmax)
    expect(log.get("verdict") == "NOT_REACHED", "the branch never taken is NOT_REACHED: %s" % log)
    # Four loop iterations are four steps; the evaluation after the loop (no grad) is not a fifth.
    expect(query(work, "SELECT step FROM steps ORDER BY step") == [(0,), (1,), (2,), (3,)],
           "steps 0..3 recorded: %s" % query(work, "SELECT step FROM steps"))


def verify_steps(args):
    """Every step for MPNANNY_VERIFY_STEPS steps, then only the traced ones."""
    work = fresh(os.path.join(args.work, "verify_steps"))
    sites = write_sites(os.path.join(work, "sites.json"), without_nanny_sites(args))
    # exp(1): no alert, so no dense window after an ERROR traces every step.
    code, _ = train(args.without_nanny, work, sites, 7, {"MPNANNY_VERIFY_STEPS": "2", "MPNANNY_TRACE_INTERVAL": "3"},
                    ["1"])
    expect(code == 0, "training exits 0, got %d" % code)
    found = verdicts(work) or {}
    expect(found.get("e2e-exp", {}).get("verdict") == "NOT_OBSERVED", "exp(1) is NOT_OBSERVED")
    # Steps 0 and 1 (verification window), then 3 and 6 (traced every 3 steps).
    for site_id in ("e2e-exp", "e2e-softmax"):
        expect(found.get(site_id, {}).get("steps_observed") == 4, "%s observed on 4 of 7 steps: %s" %
               (site_id, found.get(site_id)))
    expect(query(work, "SELECT step FROM steps WHERE traced = 1 ORDER BY step") == [(0,), (3,), (6,)],
           "steps 0, 3 and 6 traced")


def bad_sites_files(args):
    """A missing, malformed or stale sites file: one clear warning, and training goes on."""
    source = os.path.join(args.source_dir, "test", "e2e", "train_without_nanny.cpp")
    work = fresh(os.path.join(args.work, "missing"))
    missing = os.path.join(work, "nope.json")
    code, stderr = train(args.without_nanny, work, missing, 2)
    expect(code == 0, "missing file: training exits 0")
    expect(count(stderr, "mpnanny:") == 1 and ("cannot read the sites file " + missing) in stderr,
           "missing file: one warning naming it")
    expect(verdicts(work) is None, "missing file: no verification data")

    work = fresh(os.path.join(args.work, "malformed"))
    malformed = os.path.join(work, "sites.json")
    with open(malformed, "w") as f:
        f.write('{"schema_version": 1, "sites": [ {"id": ')
    code, stderr = train(args.without_nanny, work, malformed, 2)
    expect(code == 0, "malformed file: training exits 0")
    expect(count(stderr, "mpnanny:") == 1 and ("malformed sites file " + malformed) in stderr,
           "malformed file: one warning naming it")

    # The exp site's line moved (the file was edited after the scan): that site is dropped with one
    # warning naming file and line; the others are still verified.
    work = fresh(os.path.join(args.work, "stale"))
    stale = write_sites(os.path.join(work, "sites.json"), without_nanny_sites(args, line_offset=1))
    code, stderr = train(args.without_nanny, work, stale, 2)
    expect(code == 0, "stale site: training exits 0")
    where = "train_without_nanny.cpp:%d" % (marked_line(source, "site: overflow") + 1)
    expect(count(stderr, "no longer match") == 1 and where in stderr, "stale site: one warning naming " + where)
    found = verdicts(work) or {}
    expect(set(found) == {"e2e-softmax", "e2e-log"}, "stale site: the other sites verified: %s" % sorted(found))

    # The same with a Nanny in the program: the session started at load time and the Nanny that
    # takes it over read the file once, so the warning is still printed once.
    work = fresh(os.path.join(args.work, "stale_with_nanny"))
    example = os.path.join(args.source_dir, "examples", "train_attention.cpp")
    stale = write_sites(os.path.join(work, "sites.json"), [
        site(example, "masked_fill(mask, -1e9)", "scores.masked_fill(mask, -1e9)", ["aten::masked_fill"], "overflow",
             "e2e-mask", line_offset=-1)])
    code, stderr = train(args.example, work, stale, 2)
    expect(code == 0, "stale site, with a Nanny: training exits 0")
    expect(count(stderr, "no longer match") == 1, "stale site, with a Nanny: one warning")


def main():
    parser = argparse.ArgumentParser()
    for option in ("--check", "--example", "--without-nanny", "--source-dir", "--build-dir", "--work"):
        parser.add_argument(option, required=True)
    parser.add_argument("--torch-version", default="")
    parser.add_argument("group", choices=["verify_example", "verify_example_fp16", "verify_without_nanny",
                                          "verify_steps", "bad_sites_files"])
    args = parser.parse_args()
    globals()[args.group](args)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
