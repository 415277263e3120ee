#!/usr/bin/env python3
"""Writes the seed databases of the query fuzzer (test/fuzz/corpus/query).

The schema is read from runtime/src/MetricsWriter.cpp (kSchema), so the seeds follow the runtime's
layout. Pages of 512 bytes and a handful of rows keep each file a few kilobytes, small enough for
libFuzzer to mutate quickly; every table and every column the queries read holds a value, and one
seed has a site_verdicts table (written by MPNANNY_VERIFY=1 runs). Run it again after a schema
change:  python3 test/fuzz/make_query_seeds.py
"""
import json
import os
import re
import sqlite3

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def schema():
    source = open(os.path.join(ROOT, "runtime", "src", "MetricsWriter.cpp"), encoding="utf-8").read()
    return re.search(r'kSchema = R"sql\((.*?)\)sql"', source, re.S).group(1)


def version():
    header = open(os.path.join(ROOT, "runtime", "include", "mpnanny", "MetricsWriter.h"), encoding="utf-8").read()
    return re.search(r"kMetricsSchemaVersion = (\d+)", header).group(1)


def write(path, names, verdicts):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size = 512")
    db.executescript(schema())
    db.execute("INSERT INTO meta VALUES('schema_version', ?), ('writer', 'mpnanny-runtime')", (version(),))
    db.execute("INSERT INTO runs(started_at, pid, rank, precision, options_json, torch_version) "
               "VALUES('2026-01-01T00:00:00Z', 1, 0, 'fp16', ?, '1.13.1')", (json.dumps({"sample_every": 1}),))
    layer, op, source, function = names
    db.execute("INSERT INTO locations VALUES(1, 1, ?, ?, 12)", (function, source))
    for step in range(3):
        db.execute("INSERT INTO steps VALUES(1, ?, 1, ?, 1.5, ?)", (step, step == 2, step))
        rows = [("forward", op, "", 1, 60000.0 * (step + 1)), ("gradient", "", layer + ".weight", 0, 1e-9),
                ("parameter", "", layer + ".weight", 0, 0.5)]
        for seq, (phase, row_op, name, location, max_abs) in enumerate(rows):
            db.execute("INSERT INTO tensor_stats VALUES(1,?,?,?,?,?,?,'Float','[2,3]',6,?,0,1,?,1e-8,0.1,2.0,1.4,"
                       "?,1,0,0,0,0,0.01)", (step, seq, phase, row_op, name, location, step, max_abs, step))
            db.execute("INSERT INTO histograms VALUES(1,?,?,-30,?)", (step, seq, json.dumps([0, 1, 2, 3])))
        db.execute("INSERT INTO loss_scale VALUES(1, ?, ?, ?)", (step, 65536.0 / (step + 1), step == 1))
        db.execute("INSERT INTO memory VALUES(1, ?, 1000000, -1, -1)", (step,))
        db.execute("INSERT INTO scalars VALUES(1, ?, 'loss', ?)", (step, 2.0 - step))
    db.execute("INSERT INTO alerts(run_id, step, seq, type, severity, rule, phase, op, name, location_id, function, "
               "file, line, value, threshold, message) VALUES(1, 2, 0, 'OVERFLOW', 'ERROR', 'fixed', 'forward', ?, "
               "'', 1, ?, ?, 12, 180000, 65504, ?)", (op, function, source, "max |x| of " + op + " above fp16's max"))
    db.execute("INSERT INTO alerts(run_id, step, seq, type, severity, rule, phase, op, name, location_id, "
               "value, threshold, message) VALUES(1, 1, 1, 'GRAD_VANISH', 'WARNING', 'adaptive', 'gradient', '', ?, "
               "0, 1e-9, 1e-7, 'vanishing')", (layer + ".weight",))
    if verdicts:
        db.execute("CREATE TABLE site_verdicts(run_id INTEGER, site_id TEXT, check_name TEXT, verdict TEXT, "
                   "file TEXT, line INTEGER, function TEXT, steps_observed INTEGER, worst_headroom REAL, "
                   "first_step INTEGER, value REAL, evidence TEXT)")
        db.execute("INSERT INTO site_verdicts VALUES(1, '3f0c9a1e2b4d5c6f', 'mpnanny-risky-op', 'CONFIRMED', ?, "
                   "12, ?, 3, 0.36, 2, 180000, 'max |x| = 180000 > 65504 at step 2')", (source, function))
    db.commit()
    db.execute("VACUUM")
    db.close()


def main():
    out = os.path.join(HERE, "corpus", "query")
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "run.db"), ("fc1", "aten::softmax", "/src/model.cpp", "Net::forward"), False)
    # The strings a hostile or unlucky run could hold: markup, quotes, SQL, invalid UTF-8.
    write(os.path.join(out, "strings.db"),
          ("</script><script>alert(1)", "aten::x'); DROP TABLE alerts;--", "/src/\"q\"\xe9.cpp", "f<&>\u2028"),
          True)


if __name__ == "__main__":
    main()
