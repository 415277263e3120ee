"""Writes a metrics.db holding a site_verdicts table (the runtime's layout, see
runtime/src/MetricsWriter.cpp) for the sites of a sites file, the way a MPNANNY_VERIFY=1 run
would: `verdicts_db.py SITES DB LINE=VERDICT:STEPS ...`. Sites on lines not given get no row.
An older run with the opposite verdicts comes first, so readers must take the newest run."""
import json
import sqlite3
import sys

sites = json.load(open(sys.argv[1]))["sites"]
db = sqlite3.connect(sys.argv[2])
db.execute("CREATE TABLE site_verdicts(run_id INTEGER NOT NULL, site_id TEXT NOT NULL, check_name TEXT NOT NULL, "
           "file TEXT, line INTEGER, function TEXT, verdict TEXT NOT NULL, evidence TEXT, steps_observed INTEGER, "
           "worst_headroom REAL, first_step INTEGER, value REAL, PRIMARY KEY(run_id, site_id))")
wanted = {}
for arg in sys.argv[3:]:
    line, rest = arg.split("=")
    verdict, steps = rest.split(":")
    wanted[int(line)] = (verdict, int(steps))
for site in sites:
    if site["line"] not in wanted:
        continue
    verdict, steps = wanted[site["line"]]
    if verdict == "CONFIRMED":
        evidence, headroom, first_step, value = "max |x| = 1e+09 > 65504 (fp16 max) at step 0", 6.5504e-05, 0, 1e9
    else:
        evidence, headroom, first_step, value = "executed %d times, worst headroom 12x at step 1" % steps, 12.0, None, None
    row = (site["id"], site["check"], site["file"], site["line"], site["function"])
    db.execute("INSERT INTO site_verdicts VALUES(1,?,?,?,?,?,?,?,?,?,?,?)",
               row + ("NOT_REACHED", "never executed", 0, None, None, None))
    db.execute("INSERT INTO site_verdicts VALUES(2,?,?,?,?,?,?,?,?,?,?,?)",
               row + (verdict, evidence, steps, headroom, first_step, value))
db.commit()
