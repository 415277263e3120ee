#!/usr/bin/env python3
"""CLI tests on the scenario's databases: golden outputs, error exits, escaping, comparison.

Golden files are normalized: paths, timestamps and the LibTorch version are replaced and
floating-point numbers rounded to 4 significant digits. Numbers are then compared, not their
digits: integers exactly, reals to a relative 1e-3, because the stat kernel's sums differ in
their last bits between CPUs with and without FMA, and rounding to 4 digits does not hide a
difference that straddles a rounding boundary (8.9175e-05 is 8.918e-05 on one machine and
8.917e-05 on the next). So they hold on any machine that builds the same code. To regenerate
after an intended change:
    MPNANNY_UPDATE_GOLDEN=1 ctest -R cli.golden
and review the diff.

Where LibTorch's own arithmetic differs between major versions, a file in golden/libtorch-N/
replaces the one in golden/ for LibTorch N (the scenario's databases name their version), and
an update rewrites that file. Only the fp32-vs-bf16 comparison has one: LibTorch 2.x's bf16
backward matrix products round differently from 1.13's (the forward and the whole fp32 run
agree bit for bit), so the bf16 run drifts from fp32 a step earlier there.
"""
import argparse
import difflib
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message)


def run(args, cli, cwd=None, env=None):
    environment = dict(os.environ, NO_COLOR="1")
    environment.pop("MPNANNY_DIR", None)
    environment.update(env or {})
    proc = subprocess.run([cli.mpnanny] + args, capture_output=True, text=True, timeout=60,
                          env=environment, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def round_number(match):
    text = match.group(0)
    try:
        value = float(text)
    except ValueError:
        return text
    return "%.4g" % value


NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def same_but_for_last_digits(expected, actual):
    """Whether two normalized texts agree: the same words and layout, the same integers, and
    reals within a relative 1e-3 (the module docstring says why)."""
    if NUMBER.sub("<number>", expected) != NUMBER.sub("<number>", actual):
        return False
    for want, got in zip(NUMBER.findall(expected), NUMBER.findall(actual)):
        if want == got:
            continue
        is_integer = all(re.fullmatch(r"-?\d+", token) for token in (want, got))
        if is_integer or not math.isclose(float(want), float(got), rel_tol=1e-3, abs_tol=1e-30):
            return False
    return True


def normalize(text, cli):
    text = text.replace(os.path.realpath(cli.dbs), "<dbs>").replace(cli.dbs, "<dbs>")
    text = text.replace(os.path.realpath(cli.source_dir), "<src>").replace(cli.source_dir, "<src>")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text)
    text = re.sub(r'("torch_version": )"[^"]*"', r'\1"<torch>"', text)
    text = re.sub(r"(torch_version,)[^\r\n]*", r"\1<torch>", text)
    text = re.sub(r"(torch )\d[^\s]*", r"\1<torch>", text)
    # Reals with a fraction or an exponent: 4 significant digits (the last bits differ by CPU).
    text = re.sub(r"(?<![\w.])-?\d+\.\d+(?:[eE][+-]?\d+)?|(?<![\w.])-?\d+[eE][+-]?\d+", round_number, text)
    return text.replace("\r\n", "\n")


def golden(cli):
    run_db = os.path.join(cli.dbs, "run", "metrics.db")
    ranks = os.path.join(cli.dbs, "ranks")
    script_db = os.path.join(cli.dbs, "script", "metrics.db")
    train = os.path.join(cli.dbs, "train")
    cases = []
    for fmt in ("table", "json", "csv"):
        cases += [
            ("summary." + fmt, ["summary", "--db", run_db, "--format", fmt]),
            ("alerts." + fmt, ["alerts", "--db", run_db, "--format", fmt]),
            ("stats-step6." + fmt, ["stats", "--db", run_db, "--step", "6", "--format", fmt]),
            ("sites." + fmt, ["sites", "--db", run_db, "--format", fmt]),
            ("compare-train." + fmt, ["compare", os.path.join(train, "fp32", "metrics.db"),
                                      os.path.join(train, "bf16", "metrics.db"), "--format", fmt]),
        ]
    cases += [
        ("alerts-errors-steps6-7.table", ["alerts", "--db", run_db, "--severity", "error", "--steps", "6:7"]),
        ("alerts-overflow-forward.table", ["alerts", "--db", run_db, "--type", "OVERFLOW", "--site", "forward"]),
        ("stats-step6-param-fc1.table", ["stats", "--db", run_db, "--step", "6", "--param", "fc1"]),
        ("sites-none.table", ["sites", "--db", script_db]),
        ("summary-ranks.table", ["summary", "--db", ranks]),
        ("alerts-ranks.table", ["alerts", "--db", ranks]),
        ("alerts-ranks.csv", ["alerts", "--db", ranks, "--format", "csv"]),
    ]
    update = os.environ.get("MPNANNY_UPDATE_GOLDEN") == "1"
    os.makedirs(cli.golden, exist_ok=True)
    with sqlite3.connect("file:%s?mode=ro" % os.path.join(train, "bf16", "metrics.db"), uri=True) as db:
        torch_major = db.execute("SELECT torch_version FROM runs").fetchone()[0].split(".")[0]
    platform_golden = os.path.join(cli.golden, "libtorch-" + torch_major)
    for name, args in cases:
        code, out, err = run(args, cli)
        check(code == 0, "%s: exit %d (%s)" % (name, code, err.strip()))
        text = normalize(out, cli)
        if name.endswith(".json"):
            json.loads(out)  # must parse as it is, before normalization
        if name.endswith(".table"):
            for line in out.splitlines():
                check(len(line) <= 100, "%s: line wider than 100 columns: %r" % (name, line))
            check("\x1b[" not in out, "%s: colour codes in a pipe" % name)
        path = os.path.join(platform_golden, name + ".txt")
        if not os.path.exists(path):
            path = os.path.join(cli.golden, name + ".txt")
        if update or not os.path.exists(path):
            with open(path, "w") as f:
                f.write(text)
            print("wrote " + path)
            continue
        with open(path) as f:
            expected = f.read()
        if not same_but_for_last_digits(expected, text):
            diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                                os.path.relpath(path, os.path.dirname(cli.golden)),
                                                "actual", n=2))
            check(False, "%s differs from its golden file:\n%s" % (name, diff[:4000]))
    # What the golden files must say, whatever they were regenerated to.
    _, out, _ = run(["summary", "--db", run_db, "--format", "json"], cli)
    summary = json.loads(out)[0]
    check(summary["first_error"] is not None and summary["first_error"]["step"] == 6,
          "the first ERROR is at step 6 (fc1's weights blown up)")
    check(summary["first_error"]["type"] == "OVERFLOW", "the first ERROR is an OVERFLOW")
    check(summary["loss_scale"] is not None and "32768 @4" in summary["loss_scale"]["history"],
          "loss-scale history shows the backoff at step 4: %r" % summary["loss_scale"])
    _, out, _ = run(["summary", "--db", ranks, "--format", "json"], cli)
    check([r["rank"] for r in json.loads(out)] == [0, 1], "a directory gives one summary per rank")
    _, out, _ = run(["alerts", "--db", ranks, "--format", "json"], cli)
    check(json.loads(out) and all(a["rank"] == 1 for a in json.loads(out)),
          "only rank 1 (the infinity) has alerts, and rows say so")
    _, out, _ = run(["sites", "--db", run_db, "--format", "json"], cli)
    verdicts = [v["verdict"] for v in json.loads(out)]
    check(verdicts == ["CONFIRMED", "NOT_OBSERVED", "NOT_REACHED"], "verdicts in severity order: %r" % verdicts)
    code, out, err = run(["sites", "--db", script_db], cli)
    check(code == 0 and "no verification data in this run" in out, "sites without the table says so")
    check("(train with MPNANNY_VERIFY=1)" in err, "a run made without verification is told to set it: %r" % err)
    # A run made with MPNANNY_VERIFY=1 whose sites file did not load: setting it again is no advice.
    asked = os.path.join(fresh_directory(cli.work + "-golden"), "metrics.db")
    shutil.copy(script_db, asked)
    with sqlite3.connect(asked) as db:
        db.execute("UPDATE runs SET options_json = ?",
                   (json.dumps({"verify": False, "verify_requested": True, "sites_file": "/x/sites.json"}),))
    code, out, err = run(["sites", "--db", asked], cli)
    check(code == 0 and "made with MPNANNY_VERIFY=1, but its sites file /x/sites.json could not be read" in err,
          "a verification run whose sites file did not load says so: %r" % err)
    code, out, err = run(["stats", "--db", run_db, "--step", "6", "--param", "fc1", "--format", "json"], cli)
    check(code == 0 and {r["name"] for r in json.loads(out)} == {"fc1.weight", "fc1.bias"},
          "--param fc1 selects fc1.weight and fc1.bias")


def fresh_directory(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def errors(cli):
    work = fresh_directory(cli.work)
    run_db = os.path.join(cli.dbs, "run", "metrics.db")
    text_file = os.path.join(work, "notes.db")
    with open(text_file, "w") as f:
        f.write("not a database\n")
    foreign = os.path.join(work, "foreign.db")
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE t(x)")
    newer = os.path.join(work, "newer.db")
    shutil.copy(run_db, newer)
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    empty_dir = os.path.join(work, "empty")
    os.makedirs(empty_dir)
    cases = [
        (["summary", "--db", os.path.join(work, "missing.db")], 2, "no such file"),
        (["alerts", "--db", text_file], 2, "not an mpnanny database"),
        (["stats", "--db", foreign, "--step", "0"], 2, "not an mpnanny database"),
        (["summary", "--db", newer], 2, "newer mpnanny"),
        (["sites", "--db", empty_dir], 2, "no metrics*.db"),
        (["summary", "--db", run_db + "#99"], 2, "has no run 99"),
        (["summary", "--db", run_db + "#99999999999999999999"], 2, "no run 99999999999999999999"),
        (["summary", "--db", run_db, "--format", "xml"], 2, "--format must be"),
        (["alerts", "--db", run_db, "--bogus"], 2, "unknown option --bogus"),
        (["alerts", "--db", run_db, "--steps", "x:y"], 2, "--steps must be"),
        (["alerts", "--db", run_db, "--type", "OVERFLOWS"], 2, "no alert type 'OVERFLOWS' (types: NAN, INF,"),
        (["stats", "--db", run_db], 2, "needs --step"),
        (["stats", "--db", run_db, "--step", "1"], 1, "traced steps: 0 2 4 6"),
        (["compare", run_db], 2, "needs two databases"),
        (["report", "--db", run_db], 2, "needs -o"),
        (["frobnicate"], 2, "unknown command"),
    ]
    for args, want_code, want_text in cases:
        code, out, err = run(args, cli)
        check(code == want_code, "%s: exit %d, expected %d (%s)" % (" ".join(args[:3]), code, want_code, err.strip()))
        check(want_text in err, "%s: stderr %r lacks %r" % (" ".join(args[:3]), err.strip(), want_text))
    # Without --db: nanny_logs/metrics.db, or the directory when only per-rank files are there.
    code, _, err = run(["summary"], cli, cwd=work)
    check(code == 2 and "nanny_logs/metrics.db: no such file" in err, "default --db when nothing is there: %r" % err)
    os.makedirs(os.path.join(work, "nanny_logs"))
    for name in ("metrics-rank0.db", "metrics-rank1.db"):
        shutil.copy(os.path.join(cli.dbs, "ranks", name), os.path.join(work, "nanny_logs", name))
    code, out, err = run(["summary", "--format", "json"], cli, cwd=work)
    check(code == 0 and [r["rank"] for r in json.loads(out)] == [0, 1], "default --db finds the rank files: %r" % err)
    code, out, err = run(["summary", "--format", "json"], cli, cwd=cli.dbs, env={"MPNANNY_DIR": "run"})
    check(code == 0 and json.loads(out)[0]["file"] == "run/metrics.db", "MPNANNY_DIR is the default too: %r" % err)
    # The database string never reaches SQL as text: a site filter full of quotes is just no match.
    code, out, _ = run(["alerts", "--db", run_db, "--site", "x' OR '1'='1", "--format", "json"], cli)
    check(code == 0 and json.loads(out) == [], "a quoting site filter matches nothing")
    # A line number past int64 is a filter that names no line, not an error.
    code, out, err = run(["alerts", "--db", run_db, "--site", "model.cpp:99999999999999999999", "--format", "json"], cli)
    check(code == 0 and json.loads(out) == [], "a site line past int64 matches nothing: exit %d %r" % (code, err))
    # Colour only when asked (or on a terminal).
    _, out, _ = run(["alerts", "--db", run_db, "--color", "always"], cli)
    check("\x1b[" in out, "--color always colours the table")
    # A run may still be open (no ended_at) and readable while the runtime writes: covered by the
    # runtime's WAL test; here the file is read-only-opened, so reading must not change it.
    before = os.path.getmtime(run_db)
    run(["summary", "--db", run_db], cli)
    check(os.path.getmtime(run_db) == before, "reading does not modify the database")


def writes_and_limits(cli):
    """Report files are written whole or not at all, with the system's reason when they cannot
    be; a finished database is readable from a directory the reader cannot write; counts past an
    int and directories given with a run are read as meant."""
    work = fresh_directory(cli.work + "-writes")  # the groups run side by side
    run_db = os.path.join(cli.dbs, "run", "metrics.db")
    kept = os.path.join(work, "kept.html")
    with open(kept, "w") as f:
        f.write("the previous report\n")

    def limited_file_size():
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))  # above SQLite's 32 KiB -shm

    proc = subprocess.run([cli.mpnanny, "report", "--db", run_db, "-o", kept], capture_output=True, text=True,
                          timeout=60, preexec_fn=limited_file_size)
    check(proc.returncode == 2 and "File too large" in proc.stderr,
          "a report that cannot be written whole says why: exit %d %r" % (proc.returncode, proc.stderr))
    check(open(kept).read() == "the previous report\n", "a failed report leaves the previous file as it was")
    check(sorted(os.listdir(work)) == ["kept.html"], "a failed report leaves no temporary file: %r" % os.listdir(work))
    code, out, err = run(["report", "--db", run_db, "-o", kept], cli)
    check(code == 0 and open(kept).read().startswith("<!DOCTYPE html>"), "the report replaces the file: %r" % err)
    check(oct(os.stat(kept).st_mode & 0o777) != oct(0o600), "the report is not left private like a temporary file")
    code, _, err = run(["report", "--db", run_db, "-o", work], cli)
    check(code == 2 and "Is a directory" in err, "a report path that is a directory says so: %r" % err)

    for args in (["summary", "--top", "4294967295"], ["report", "-o", os.path.join(work, "all.html"),
                                                      "--max-heatmaps", "99999999999999"]):
        code, _, err = run(args + ["--db", run_db], cli)
        check(code == 0, "%s past an int means all: exit %d %r" % (args[1], code, err))
    code, _, err = run(["stats", "--db", run_db, "--step", "99999999999999999999"], cli)
    check(code == 2 and "--step must be an integer" in err, "a step past int64 is refused: %r" % err)
    code, out, err = run(["alerts", "--db", run_db, "--site", ":46", "--format", "json"], cli)
    check(code == 0 and all(a["line"] == 46 for a in json.loads(out)), "--site :N is line N of any file: %r" % err)

    # Each run of a report shows its own verdicts, though both databases have rank 0.
    first, second = os.path.join(work, "first.db"), os.path.join(work, "second.db")
    shutil.copy(run_db, first)
    shutil.copy(run_db, second)
    with sqlite3.connect(second) as db:
        db.execute("DELETE FROM site_verdicts WHERE rowid = (SELECT min(rowid) FROM site_verdicts)")
        verdicts_left = db.execute("SELECT count(*) FROM site_verdicts").fetchone()[0]
    page_path = os.path.join(work, "two.html")
    code, _, err = run(["report", "--db", first, second, "-o", page_path], cli)
    page = open(page_path, encoding="utf-8").read() if code == 0 else ""
    found = re.search(r'<script id="mpnanny-data"[^>]*>(.*?)</script>', page, re.S)
    runs = json.loads(found.group(1))["runs"] if found else []
    check([len(r["verdicts"] or []) for r in runs] == [verdicts_left + 1, verdicts_left],
          "each run's verdicts are its own: %r %r" % ([len(r["verdicts"] or []) for r in runs], err))

    # A file that holds two runs (a directory used again): summary reads the latest and names the other.
    appended = os.path.join(work, "appended.db")
    shutil.copy(run_db, appended)
    with sqlite3.connect(appended) as db:
        db.execute("INSERT INTO runs(run_id, started_at, precision) VALUES (2, '2026-12-04T00:00:00Z', 'FP16')")
    code, out, err = run(["summary", "--db", appended, "--format", "json"], cli)
    latest = json.loads(out)[0] if code == 0 else {}
    check(latest.get("run_id") == 2 and latest.get("other_runs") == [1], "the other run is named: %r %r" % (latest, err))
    code, out, _ = run(["summary", "--db", appended], cli)
    check("also    run 1 in this file (--db %s#1 reads one)" % appended in out, "the table names the other run: %r" % out)

    run_dir = os.path.dirname(run_db)
    code, out, err = run(["summary", "--db", run_dir + "#1", "--format", "json"], cli)
    check(code == 0 and json.loads(out)[0]["run_id"] == 1, "a directory with #RUN reads its metrics.db: %r" % err)
    train = os.path.join(cli.dbs, "train")
    code, _, err = run(["compare", os.path.join(train, "fp32"), os.path.join(train, "bf16")], cli)
    check(code == 0, "compare takes the runs' directories: %r" % err)

    # Reading a finished database (WAL mode, no -wal file) as a user who cannot write its directory:
    # SQLite cannot create the -shm file it wants. Run as nobody where the tests run as root.
    # Under the system's temporary directory: the build tree may sit in a folder only its owner
    # can search (a CI checkout in mktemp -d).
    shared = tempfile.mkdtemp(prefix="mpnanny-readonly-")
    finished = os.path.join(shared, "finished")
    logged = os.path.join(shared, "logged")
    for folder in (finished, logged):
        os.makedirs(folder)
        shutil.copy(run_db, os.path.join(folder, "metrics.db"))
    with open(os.path.join(logged, "metrics.db-wal"), "wb") as f:
        f.write(b"\0" * 64)  # a run killed while writing leaves its log behind
    binary = os.path.join(shared, "mpnanny")
    shutil.copy(cli.mpnanny, binary)
    os.chmod(shared, 0o755)
    for folder in (finished, logged):
        for name in os.listdir(folder):
            os.chmod(os.path.join(folder, name), 0o444)
        os.chmod(folder, 0o555)
    as_reader = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    reachable = subprocess.run(as_reader + [binary, "--help"], capture_output=True).returncode == 0
    check(reachable, "the read-only check can run its reader as nobody from %s" % shared)
    if reachable:
        proc = subprocess.run(as_reader + [binary, "summary", "--db", finished, "--format", "json"],
                              capture_output=True, text=True, timeout=60)
        check(proc.returncode == 0 and json.loads(proc.stdout)[0]["run_id"] == 1,
              "a finished database in a read-only directory is readable: %r" % proc.stderr)
        proc = subprocess.run(as_reader + [binary, "summary", "--db", logged], capture_output=True, text=True,
                              timeout=60)
        check(proc.returncode == 2 and "write-ahead log" in proc.stderr and "copy" in proc.stderr,
              "a database with a log in a read-only directory says why and what to do: %r" % proc.stderr)
        check(sorted(os.listdir(finished)) == ["metrics.db"], "reading left no file behind")
    for folder in (finished, logged):
        os.chmod(folder, 0o755)
    shutil.rmtree(shared, ignore_errors=True)


def escaping(cli):
    work = cli.work + "-escaping"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    script_db = os.path.join(cli.dbs, "script", "metrics.db")
    html = os.path.join(work, "script.html")
    code, out, err = run(["report", "--db", script_db, "-o", html, "--title", "<img src=x onerror=alert(2)>"], cli)
    check(code == 0, "report on the <script> database: exit %d %s" % (code, err))
    page = open(html, encoding="utf-8").read()
    check("<script>alert(1)" not in page, "the layer name appears as markup in the page")
    check("\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in page, "the layer name is in the data, escaped")
    check("<img" not in page, "the title is escaped")
    check(page.count("<script") == 4, "exactly our four <script> elements, found %d" % page.count("<script"))
    check("http://" not in page.replace("http://www.w3.org", "") and "https://" not in page.split("uPlot license")[0],
          "no network address before the license")
    _, out, _ = run(["stats", "--db", script_db, "--step", "0", "--format", "csv"], cli)
    check('<script>alert(1)</script>.weight' in out, "CSV keeps the name as it is (it is data, not markup)")
    _, out, _ = run(["summary", "--db", script_db, "--format", "json"], cli)
    json.loads(out)


def compare(cli):
    train = os.path.join(cli.dbs, "train")
    code, out, err = run(["compare", os.path.join(train, "fp32", "metrics.db"),
                          os.path.join(train, "bf16", "metrics.db"), "--format", "json"], cli)
    check(code == 0, "compare exit %d %s" % (code, err))
    result = json.loads(out)
    check(result["low_format"] == "BF16", "the low run is recognized as bf16 from its dtypes")
    check(result["departure"] is not None, "the bf16 training run departs from the fp32 one")
    if result["departure"]:
        check(isinstance(result["departure"]["step"], int), "departure has a step")
        first = result["rows"][0]
        check(first["departs"] and first["departure_step"] == result["departure"]["step"],
              "the first row is where the runs depart")
        steps = [r["departure_step"] for r in result["rows"] if r["departs"]]
        check(steps == sorted(steps), "departed rows are in step order")
    for row in result["rows"]:
        for v in row["rel_max_abs"] + row["rel_norm"]:
            check(v is None or v >= 0, "relative differences are non-negative")
    # A low run gone NaN: its values shown as such, not as blanks (JSON has no NaN: text).
    nan_low = os.path.join(cli.work + "-compare-nan.db")
    shutil.copy(os.path.join(train, "bf16", "metrics.db"), nan_low)
    with sqlite3.connect(nan_low) as db:
        db.execute("UPDATE tensor_stats SET nan_count = 1, max_abs = NULL, norm = NULL WHERE step = 0")
    code, out, err = run(["compare", os.path.join(train, "fp32", "metrics.db"), nan_low, "--format", "json"], cli)
    departure = json.loads(out)["departure"] if code == 0 else {}
    check(departure.get("step") == 0 and departure.get("low") == "NaN" and departure.get("relative") == "inf",
          "a NaN low run departs at step 0 with NaN shown: %r %r" % (departure, err))
    code, out, _ = run(["compare", os.path.join(train, "fp32", "metrics.db"), nan_low], cli)
    check(re.search(r"\(fp32\) vs NaN, relative inf", out) is not None, "the table shows NaN and inf: %r" % out[:400])
    # A huge tolerance: nothing departs.
    code, out, _ = run(["compare", os.path.join(train, "fp32", "metrics.db"),
                        os.path.join(train, "bf16", "metrics.db"), "--tolerance", "1e9"], cli)
    check(code == 0 and "no departure" in out, "with tolerance 1e9 nothing departs")
    # The one-pass comparison from mpnanny::compare_precision.
    def result_of(name):
        path = os.path.join(cli.dbs, "compare-one", name, "result.txt")
        return dict(line.split(" ", 1) for line in open(path).read().splitlines() if " " in line)
    info = result_of("bf16-run")
    check(info.get("low_ran") == "1", "compare_precision ran the bf16 pass: %r" % info)
    check(info.get("mode") == "autocast-cpu", "bf16 on the CPU uses autocast: %r" % info.get("mode"))
    for name in ("bf16-run", "fp16-run"):
        result = result_of(name)
        for key in ("training_restored", "parameters_restored", "gradients_restored"):
            check(result.get(key) == "1", "%s: compare_precision leaves %s: %r" % (name, key, result))
    check(info.get("reference", "").endswith("/fp32/metrics.db#1") and info.get("low", "").endswith("/bf16/metrics.db#1"),
          "each pass has its own database: %r" % info)
    fp16 = result_of("fp16-run")
    check(fp16.get("mode") == "converted", "fp16 on the CPU converts the model: %r" % fp16.get("mode"))
    # LibTorch 1.13 has no fp16 matmul on the CPU: the pass fails there, saying why; 2.x runs it.
    if int(fp16.get("torch_major", "1")) >= 2:
        check(fp16.get("low_ran") == "1", "LibTorch 2.x runs the fp16 pass on the CPU: %r" % fp16)
    else:
        check(fp16.get("low_ran") == "0" and "fp16 pass failed" in fp16.get("error", "").lower(),
              "a failed fp16 pass says why: %r" % fp16)
    check(os.path.exists(fp16.get("reference", "#").split("#")[0]), "the fp32 pass is recorded even then")
    html = os.path.join(cli.work + "-compare.html")
    code, out, err = run(["compare", info.get("reference", ""), info.get("low", ""), "-o", html], cli)
    check(code == 0 and os.path.exists(html), "compare of the two passes writes HTML: %s" % err)
    check("tensors matched" in out, "compare prints its table")
    code, out, _ = run(["compare", info.get("reference", ""), info.get("low", ""), "--format", "json"], cli)
    result = json.loads(out)
    check(result["matched"] > 0, "the passes' tensors are matched")
    kinds = {r["phase"] for r in result["rows"]}
    check({"forward", "gradient"} <= kinds, "forward outputs and gradients are compared: %r" % kinds)


# The table the runtime writes on notable steps of a data-parallel run (issue 28): every rank
# writes one row per rank of the group, so any one file holds the whole group's view.
RANK_AGREEMENT_SQL = """
CREATE TABLE IF NOT EXISTS rank_agreement(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, rank INTEGER NOT NULL, error INTEGER NOT NULL,
  bad_before TEXT, bad_parameter TEXT, loss_scale REAL, skipped INTEGER, PRIMARY KEY(run_id, step, rank));
"""


def metrics_schema(cli):
    """The tables the runtime creates, from its source, so that a schema change shows here."""
    writer = open(os.path.join(cli.source_dir, "runtime", "src", "MetricsWriter.cpp")).read()
    return re.search(r'R"sql\((.*?)\)sql"', writer, re.S).group(1)


def make_rank_database(cli, path, rank, world_size, last_step, ended=True, stats=(), alerts=(), agreement=None):
    """One rank's metrics-rank<N>.db: steps 0..last_step, all traced; `stats` are tensor_stats rows
    (step, seq, phase, op, name, location_id, nan, inf, fp16_overflow); `agreement` the
    rank_agreement rows (step, rank, error, bad_before, bad_parameter, loss_scale, skipped), or
    None for a file without the table."""
    with sqlite3.connect(path) as db:
        db.executescript(metrics_schema(cli))
        db.execute("INSERT INTO meta VALUES ('schema_version', '1'), ('writer', 'mpnanny-runtime')")
        db.execute("INSERT INTO runs(run_id, started_at, ended_at, pid, rank, local_rank, world_size, precision, "
                   "torch_version) VALUES (1, '2026-12-05T10:00:00Z', ?, 100, ?, ?, ?, 'FP16', '2.6.0')",
                   (("2026-12-05T10:05:00Z" if ended else None), rank, rank, world_size))
        db.executemany("INSERT INTO locations VALUES (1, ?, ?, ?, ?)",
                       [(1, "Net::forward", "/src/model.cpp", 40), (2, "Net::forward", "/src/model.cpp", 88)])
        db.executemany("INSERT INTO steps VALUES (1, ?, 1, 0, 10.0, 0)", [(s,) for s in range(last_step + 1)])
        db.executemany("INSERT INTO tensor_stats(run_id, step, seq, phase, op, name, location_id, dtype, numel, "
                       "nan_count, inf_count, zero_count, max_abs, fp16_overflow, bf16_overflow) "
                       "VALUES (1, ?, ?, ?, ?, ?, ?, 'Half', 16, ?, ?, 0, 1.0, ?, 0)", stats)
        db.executemany("INSERT INTO alerts(run_id, step, seq, type, severity, rule, phase, op, name, location_id, "
                       "function, file, line, value, threshold, message) VALUES (1, ?, ?, ?, 'ERROR', 'fixed', ?, ?, "
                       "?, 2, 'Net::forward', '/src/model.cpp', 88, 3, 0, 'non-finite values')", alerts)
        if agreement is not None:
            db.executescript(RANK_AGREEMENT_SQL)
            db.executemany("INSERT INTO rank_agreement VALUES (1, ?, ?, ?, ?, ?, ?, ?)", agreement)


def clean_step(step, seq=0):
    """A healthy traced step: a forward op, a backward op, two gradients before and after the reduce."""
    return [(step, seq, "forward", "aten::addmm", None, 1, 0, 0, 0),
            (step, seq + 1, "backward", "aten::mm", None, 2, 0, 0, 0),
            (step, seq + 2, "gradient", None, "layer1.weight", 0, 0, 0, 0),
            (step, seq + 3, "gradient", None, "layer3.weight", 0, 0, 0, 0),
            (step, seq + 4, "reduced_gradient", None, "layer1.weight", 0, 0, 0, 0),
            (step, seq + 5, "reduced_gradient", None, "layer3.weight", 0, 0, 0, 0)]


def make_ddp_directory(cli, directory):
    """Four ranks, steps 0..9. At step 6 rank 2's backward aten::mm (model.cpp:88) makes an Inf that
    reaches its layer3.weight gradient before the all-reduce; after it, every rank's reduced
    gradient holds it. Decoys the origin must not take: a notable step 4 where the ranks only
    disagree on the loss scale; an fp16 overflow in a forward op (an activation, not a gradient)
    on rank 0 at step 3; and on rank 2 an fp16 overflow in the forward op just before the Inf (the
    op named must be the first with an Inf, not the first with anything bad)."""
    os.makedirs(directory)
    for rank in range(4):
        stats = []
        for step in range(10):
            if step == 6:
                continue
            stats += clean_step(step)
        stats[3 * 6] = (3, 0, "forward", "aten::addmm", None, 1, 0, 0, 5) if rank == 0 else stats[3 * 6]
        inf_here = 3 if rank == 2 else 0
        stats += [(6, 0, "forward", "aten::addmm", None, 1, 0, 0, 2 if rank == 2 else 0),
                  (6, 1, "backward", "aten::mm", None, 2, 0, inf_here, 0),
                  (6, 2, "backward", "aten::addmm", None, 1, 0, inf_here, 0),
                  (6, 3, "gradient", None, "layer1.weight", 0, 0, 0, 0),
                  (6, 4, "gradient", None, "layer3.weight", 0, 0, inf_here, 0),
                  (6, 5, "reduced_gradient", None, "layer1.weight", 0, 0, 0, 0),
                  (6, 6, "reduced_gradient", None, "layer3.weight", 0, 0, 3, 0)]
        alerts = [(6, 1, "INF", "backward", "aten::mm", None)] if rank == 2 else [
            (6, 6, "INF", "reduced_gradient", None, "layer3.weight")]
        agreement = [(4, r, 0, None, None, 65536.0 if r != 1 else 32768.0, 0) for r in range(4)]
        agreement += [(6, r, 1, "inf" if r == 2 else None, "layer3.weight" if r == 2 else None, 65536.0, 1)
                      for r in range(4)]
        make_rank_database(cli, os.path.join(directory, "metrics-rank%d.db" % rank), rank, 4, 9, stats=stats,
                           alerts=alerts, agreement=agreement)


def ranks(cli):
    """The ranks of a data-parallel run read together: where a bad value came from, which ranks
    stopped early, and --rank to read one of them."""
    work = fresh_directory(cli.work + "-ranks")
    ddp = os.path.join(work, "ddp")
    make_ddp_directory(cli, ddp)
    wanted = ("origin: rank 2, step 6: Inf in the gradient of layer3.weight before all-reduce (op aten::mm at "
              "model.cpp:88); ranks 0, 1, 3 received it (bad after the all-reduce on ranks 0, 1, 3)")
    code, out, err = run(["summary", "--db", ddp], cli)
    check(code == 0, "summary of the ddp directory: exit %d %r" % (code, err))
    check(" ".join(out.split()).startswith(wanted), "the table opens with the origin: %r" % out[:400])
    check(all(len(line) <= 100 for line in out.splitlines()), "the origin line wraps within 100 columns")
    check("stopped" not in out, "no rank stopped in the ddp run: %r" % out[:400])
    code, out, err = run(["summary", "--db", ddp, "--format", "json"], cli)
    runs = json.loads(out) if code == 0 else []
    check([r["rank"] for r in runs] == [0, 1, 2, 3], "one summary per rank: %r" % err)
    origin = runs[0].get("origin") if runs else None
    check(origin is not None and all(r.get("origin") == origin for r in runs), "every rank carries the origin")
    if origin:
        first = origin["ranks"][0]
        check(origin["step"] == 6 and origin["source"] == "rank_agreement",
              "the origin step comes from rank_agreement, past the loss-scale-only step 4: %r" % origin)
        check([r["rank"] for r in origin["ranks"]] == [2] and first["kind"] == "inf"
              and first["parameter"] == "layer3.weight", "rank 2's layer3.weight had the Inf: %r" % origin["ranks"])
        check(first["op"] and first["op"]["op"] == "aten::mm" and first["op"]["line"] == 88
              and first["op"]["seq"] == 1, "the first op with an Inf is aten::mm at line 88: %r" % first["op"])
        check(origin["received"] == [0, 1, 3] and origin["bad_after_reduce"] == [0, 1, 3],
              "ranks 0, 1, 3 received it and show it after the reduce: %r" % origin)
    check(runs and runs[0].get("stopped") == [], "no stopped rank: %r" % (runs[0].get("stopped") if runs else None))
    code, out, _ = run(["summary", "--db", ddp, "--format", "csv"], cli)
    for row in ("2,origin.step,6", "2,origin.kind,inf", "2,origin.parameter,layer3.weight", "2,origin.op,aten::mm",
                "2,origin.site,model.cpp:88", "2,origin.received,0 1 3"):
        check(row in out.splitlines(), "CSV long form has %r" % row)

    # Without rank_agreement (files from before it): the pre-reduce gradients give the same origin.
    legacy = os.path.join(work, "legacy")
    shutil.copytree(ddp, legacy)
    for rank in range(4):
        with sqlite3.connect(os.path.join(legacy, "metrics-rank%d.db" % rank)) as db:
            db.execute("DROP TABLE rank_agreement")
    code, out, err = run(["summary", "--db", legacy, "--format", "json"], cli)
    origin = json.loads(out)[0].get("origin") if code == 0 else None
    check(origin is not None and origin["source"] == "gradients" and origin["step"] == 6
          and [r["rank"] for r in origin["ranks"]] == [2] and origin["ranks"][0]["parameter"] == "layer3.weight",
          "the fallback finds rank 2 at step 6 from its gradient rows: %r %r" % (origin, err))

    # The origin rank's own file missing: any other rank's rank_agreement still names it, and the
    # directory says rank 2 left no database.
    partial = os.path.join(work, "partial")
    shutil.copytree(ddp, partial)
    os.remove(os.path.join(partial, "metrics-rank2.db"))
    code, out, err = run(["summary", "--db", partial, "--format", "json"], cli)
    summary = json.loads(out)[0] if code == 0 else {}
    origin = summary.get("origin") or {}
    check(origin.get("step") == 6 and [r["rank"] for r in origin.get("ranks", [])] == [2]
          and origin["ranks"][0]["parameter"] == "layer3.weight" and origin["ranks"][0]["op"] is None,
          "another rank's file names rank 2 as the origin: %r %r" % (origin, err))
    check([(s["rank"], s["last_step"]) for s in summary.get("stopped", [])] == [(2, None)],
          "rank 2 has no file: %r" % summary.get("stopped"))

    # A rank killed early: its run never closed and its last step is behind; rank 3 wrote nothing.
    stopped = os.path.join(work, "stopped")
    os.makedirs(stopped)
    for rank in range(3):
        killed = rank == 1
        make_rank_database(cli, os.path.join(stopped, "metrics-rank%d.db" % rank), rank, 4, 37 if killed else 99,
                           ended=not killed, stats=clean_step(0))
    code, out, err = run(["summary", "--db", stopped], cli)
    check(code == 0 and "rank 1 stopped at step 37 (its run did not close; the others reached step 99)" in out,
          "the table names the stopped rank: %r %r" % (out[:400], err))
    check("rank 3 left no database here (world size 4)" in out, "a rank without a file is named: %r" % out[:400])
    check("origin:" not in out, "nothing went bad, so no origin line: %r" % out[:400])
    code, out, _ = run(["summary", "--db", stopped, "--format", "json"], cli)
    stops = json.loads(out)[0]["stopped"] if code == 0 else []
    check([(s["rank"], s["last_step"], s["closed"]) for s in stops] == [(1, 37, False), (3, None, False)],
          "stopped ranks in JSON: %r" % stops)
    code, out, _ = run(["summary", "--db", stopped, "--format", "csv"], cli)
    check("1,stopped.last_step,37" in out.splitlines(), "CSV has the stopped rank's last step")

    # The report's rank view: a lane per rank, alert marks, the origin; none for a single rank.
    def report_data(directory, *extra):
        page = os.path.join(work, "report.html")
        code, _, err = run(["report", "--db", directory] + list(extra) + ["-o", page], cli)
        found = re.search(r'<script id="mpnanny-data"[^>]*>(.*?)</script>', open(page).read(), re.S) if code == 0 else None
        check(found is not None, "report of %s: exit %d %r" % (directory, code, err))
        return json.loads(found.group(1)) if found else {}
    view = report_data(ddp).get("ranks") or {}
    lanes = view.get("lanes", [])
    check([lane["rank"] for lane in lanes] == [0, 1, 2, 3] and all(lane["last_step"] == 9 for lane in lanes),
          "one lane per rank over steps 0..9: %r" % [(lane["rank"], lane["last_step"]) for lane in lanes])
    check(all([(m["step"], m["severity"], m["types"]) for m in lane["marks"]] == [(6, "ERROR", ["INF"])]
              for lane in lanes), "every lane marks its ERROR at step 6: %r" % [lane["marks"] for lane in lanes])
    check((view.get("origin") or {}).get("step") == 6, "the rank view carries the origin")
    view = report_data(stopped).get("ranks") or {}
    check([(s["rank"], s["last_step"]) for s in view.get("stopped", [])] == [(1, 37), (3, None)],
          "the rank view carries the stopped ranks: %r" % view.get("stopped"))
    check("ranks" not in report_data(os.path.join(ddp, "metrics-rank2.db")), "a single rank's report has no rank view")

    # --rank: one rank's rows, or an error naming the ranks there are.
    code, out, err = run(["alerts", "--db", ddp, "--rank", "2", "--format", "json"], cli)
    rows = json.loads(out) if code == 0 else []
    check(rows and all(r["rank"] == 2 for r in rows) and rows[0]["op"] == "aten::mm",
          "alerts --rank 2 shows rank 2's alerts only: %r %r" % (rows, err))
    code, out, err = run(["stats", "--db", ddp, "--step", "6", "--rank", "1", "--format", "json"], cli)
    rows = json.loads(out) if code == 0 else []
    check(len(rows) == 7 and all(r["rank"] == 1 for r in rows), "stats --rank 1 reads one rank: %d rows" % len(rows))
    for args in (["alerts", "--db", ddp, "--rank", "7"], ["stats", "--db", ddp, "--step", "6", "--rank", "7"]):
        code, _, err = run(args, cli)
        check(code == 2 and "--rank 7: no database of rank 7 here (ranks present: 0, 1, 2, 3)" in err,
              "%s --rank 7 names the ranks present: exit %d %r" % (args[0], code, err))
    code, _, err = run(["alerts", "--db", ddp, "--rank", "two"], cli)
    check(code == 2 and "--rank must be a rank number" in err, "--rank two is refused: %r" % err)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpnanny", required=True)
    parser.add_argument("--dbs", required=True)
    parser.add_argument("--golden", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("group", choices=["golden", "errors", "writes", "escaping", "compare", "ranks"])
    cli = parser.parse_args()
    {"golden": golden, "errors": errors, "writes": writes_and_limits, "escaping": escaping,
     "compare": compare, "ranks": ranks}[cli.group](cli)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
