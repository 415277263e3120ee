#!/usr/bin/env python3
"""Strings from the database are data, never markup or SQL (issue 9, untrusted strings).

A copy of the scenario's run database gets hostile text in every name the runtime records (layer,
op, file, function, alert message, scalar, torch version): </script>, <script>, <img onerror>,
quotes and SQL, and invalid UTF-8 in a few rows. Then:
  - the HTML report keeps them inside its JSON data: its own <script> elements only, no <img>,
    and the strings come back intact from the data;
  - every query command (summary, alerts, stats, sites, compare) in every format exits 0 and
    returns them byte for byte (JSON, CSV);
  - filters with quotes and SQL (--site, --type, --param) match as plain text: nothing more,
    nothing less, and the database is unchanged;
  - no SQL in tools/ is built from anything but string literals (values are bound).
"""
import argparse
import csv
import hashlib
import html.parser
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

FAILURES = []
# Each hostile piece tries one way out: closing the data's <script>, opening markup, breaking a
# quoted attribute or an SQL string literal.
PREFIX = "</script><script>alert(\"n\")</script><img src=x onerror=alert('n')>'; DROP TABLE steps;--"
SUFFIX = "\"' OR '1'='1<!--"
TORCH = "</script><svg onload=alert(1)>"


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message, flush=True)


def run(cli, args):
    env = dict(os.environ, NO_COLOR="1")
    env.pop("MPNANNY_DIR", None)
    proc = subprocess.run([cli.mpnanny] + args, capture_output=True, timeout=120, env=env)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def make_hostile(source, path):
    shutil.copy(source, path)
    db = sqlite3.connect(path)
    db.execute("UPDATE locations SET function = ? || function, file = file || ?", (PREFIX, SUFFIX))
    db.execute("UPDATE tensor_stats SET name = ? || name WHERE name IS NOT NULL AND name != ''", (PREFIX,))
    db.execute("UPDATE tensor_stats SET op = op || ? WHERE op IS NOT NULL AND op != ''", (SUFFIX,))
    db.execute("UPDATE alerts SET name = ? || name WHERE name IS NOT NULL AND name != ''", (PREFIX,))
    db.execute("UPDATE alerts SET op = op || ? WHERE op IS NOT NULL AND op != ''", (SUFFIX,))
    db.execute("UPDATE alerts SET function = ? || function, file = file || ?, message = ? || message",
               (PREFIX, SUFFIX, PREFIX))
    db.execute("UPDATE scalars SET name = ? || name", (PREFIX,))
    db.execute("UPDATE runs SET torch_version = ?", (TORCH,))
    db.commit()
    db.close()


def add_invalid_utf8(path):
    """Bytes that are not UTF-8 (a Latin-1 file name, a truncated sequence) in one row of each kind."""
    db = sqlite3.connect(path)
    db.execute("UPDATE alerts SET message = CAST(X'6F766572666C6F7720FF20C3' AS TEXT) "
               "WHERE alert_id = (SELECT MIN(alert_id) FROM alerts)")
    db.execute("UPDATE locations SET file = CAST(X'2F7372632F6D6F64E96C2E637070' AS TEXT) "
               "WHERE location_id = (SELECT MIN(location_id) FROM locations)")
    db.execute("UPDATE tensor_stats SET name = CAST(X'66633100FE2E776569676874' AS TEXT) "
               "WHERE rowid = (SELECT MIN(rowid) FROM tensor_stats WHERE name != '')")
    db.commit()
    db.close()


def fingerprint(path):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    counts = [db.execute('SELECT COUNT(*) FROM "%s"' % t).fetchone()[0] for (t,) in tables]
    db.close()
    return tables, counts, hashlib.sha256(open(path, "rb").read()).hexdigest()


def strings_in(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


class ScriptCounter(html.parser.HTMLParser):
    """What a browser would see as elements: start tags by name, and the data script's text."""

    def __init__(self):
        super().__init__()
        self.tags, self.data, self._in_data = {}, "", False

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self._in_data = tag == "script" and ("id", "mpnanny-data") in attrs

    def handle_data(self, data):
        if self._in_data:
            self.data += data

    def handle_endtag(self, tag):
        self._in_data = False


def report(cli, db, work):
    page_path = os.path.join(work, "report.html")
    code, _, err = run(cli, ["report", "--db", db, "-o", page_path, "--title", PREFIX])
    check(code == 0, "report: exit %d %s" % (code, err))
    if code != 0:
        return
    page = open(page_path, encoding="utf-8").read()
    parser = ScriptCounter()
    parser.feed(page)
    check(parser.tags.get("script") == 4, "report: 4 <script> elements (ours), found %s" % parser.tags.get("script"))
    for tag in ("img", "svg", "b"):
        check(tag not in parser.tags, "report: a <%s> element from the database" % tag)
    check("<!--" not in page, "report: a comment opened by a database string")
    data = json.loads(parser.data)
    found = set(strings_in(data))
    check(any(s.startswith(PREFIX) for s in found), "report: the hostile layer names are in the data, intact")
    check(any(s.endswith(SUFFIX) for s in found), "report: the hostile op and file names are in the data, intact")


def traced_step(db):
    """A step with statistics of fc1's parameters (the scenario's fc1, whatever step it traced)."""
    connection = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    step = connection.execute("SELECT MIN(step) FROM tensor_stats WHERE name LIKE ?", ("%fc1.%",)).fetchone()[0]
    connection.close()
    return str(step)


def queries(cli, db):
    for args in (["summary"], ["alerts"], ["stats", "--step", traced_step(db)], ["sites"]):
        for fmt in ("json", "csv", "table"):
            code, out, err = run(cli, args + ["--db", db, "--format", fmt])
            name = " ".join(args) + " --format " + fmt
            check(code == 0, "%s: exit %d %s" % (name, code, err.strip()[-500:]))
            if code != 0:
                continue
            if fmt == "json":
                rows = json.loads(out)
                if args[0] in ("alerts", "stats"):
                    check(any(s.startswith(PREFIX) for s in strings_in(rows)), name + ": hostile names intact")
            elif fmt == "csv":
                rows = list(csv.reader(io.StringIO(out)))
                if args[0] in ("alerts", "stats"):
                    check(any(cell.startswith(PREFIX) for row in rows for cell in row), name + ": hostile names intact")
    code, out, err = run(cli, ["compare", db, db, "--format", "json"])
    check(code == 0, "compare: exit %d %s" % (code, err.strip()[-500:]))
    if code == 0:
        json.loads(out)


def filters(cli, db):
    def alerts(*args):
        code, out, err = run(cli, ["alerts", "--db", db, "--format", "json"] + list(args))
        check(code in (0, 2), "alerts %s: exit %d %s" % (" ".join(args), code, err))
        return json.loads(out) if code == 0 else None

    everything = alerts()
    check(everything, "the scenario's run has alerts")

    # --site matches a function by substring (and a name only whole, an op or FILE:LINE exactly);
    # --type matches a rule type exactly. As plain text, SQL and LIKE wildcards match only the
    # rows that literally contain them (a function named training_pair does contain "_").
    def site_matches(injected):
        return [a for a in everything if injected in (a.get("function") or "") or a.get("name") == injected
                or a.get("op") == injected or a.get("site") == injected]

    for injected in ["' OR '1'='1", "x\" OR \"1\"=\"1", "'; DROP TABLE alerts;--", "%", "_"]:
        for option, expected in (("--site", site_matches(injected)),
                                 ("--type", [a for a in everything if a.get("type") == injected])):
            rows = alerts(option, injected) or []
            check(len(rows) == len(expected), "alerts %s %r matched %d rows, %d contain it as text: "
                  "the text reached the SQL" % (option, injected, len(rows), len(expected)))
    # The hostile text itself is an ordinary name: it matches its own rows, and only them.
    by_function = alerts("--site", PREFIX)
    expected = site_matches(PREFIX)
    check(by_function and len(by_function) == len(expected),
          "alerts --site <hostile function>: %d rows, expected the %d of that function" %
          (len(by_function or []), len(expected)))
    step = traced_step(db)
    _, out, _ = run(cli, ["stats", "--db", db, "--step", step, "--format", "json"])
    every_stat = json.loads(out)
    code, out, err = run(cli, ["stats", "--db", db, "--step", step, "--param", PREFIX + "fc1", "--format", "json"])
    check(code == 0, "stats --param <hostile>fc1: exit %d %s" % (code, err))
    if code == 0:
        rows = json.loads(out)
        expected = [r for r in every_stat if (r.get("name") or "").startswith(PREFIX + "fc1.")]
        check(rows and len(rows) == len(expected), "stats --param <hostile>fc1: %d rows, expected %d" %
              (len(rows), len(expected)))
    code, out, _ = run(cli, ["stats", "--db", db, "--step", step, "--param", "fc1' OR '1'='1", "--format", "json"])
    check(code != 0 or json.loads(out) == [], "stats --param with SQL matched rows")


def invalid_utf8(cli, db, work):
    for args in (["summary"], ["alerts"], ["stats", "--step", traced_step(db)], ["sites"]):
        for fmt in ("json", "csv", "table"):
            code, out, err = run(cli, args + ["--db", db, "--format", fmt])
            name = "invalid UTF-8: " + " ".join(args) + " --format " + fmt
            check(code == 0, "%s: exit %d %s" % (name, code, err.strip()[-300:]))
            if code == 0 and fmt == "json":
                json.loads(out)
    code, _, err = run(cli, ["report", "--db", db, "-o", os.path.join(work, "utf8.html")])
    check(code == 0, "invalid UTF-8: report: exit %d %s" % (code, err.strip()[-300:]))
    code, out, err = run(cli, ["compare", db, db, "--format", "json"])
    check(code == 0, "invalid UTF-8: compare: exit %d %s" % (code, err.strip()[-300:]))


def sql_is_literal(source_dir):
    """Every SQL text in tools/ is made of string literals: values are bound with '?', never pasted."""
    sql_word = re.compile(r'"[^"\n]*\b(SELECT|INSERT|UPDATE|DELETE|WHERE|AND|FROM|VALUES)\b[^"\n]*"')
    pasted = re.compile(r'"\s*\+\s*(?!")[A-Za-z_(]|[A-Za-z_)\]]\s*\+\s*"[^"\n]*\b(WHERE|AND|FROM|SELECT)\b')
    appended = re.compile(r'\bsql\s*\+=\s*[^\s"]')
    for folder, _, names in os.walk(os.path.join(source_dir, "tools")):
        for name in names:
            if not name.endswith(".cpp"):
                continue
            path = os.path.join(folder, name)
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                if sql_word.search(line) and pasted.search(line) or appended.search(line):
                    check(False, "%s:%d: SQL built from a value: %s" % (os.path.relpath(path, source_dir), number,
                                                                        line.strip()))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mpnanny", required=True)
    parser.add_argument("--dbs", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work", required=True)
    cli = parser.parse_args()
    shutil.rmtree(cli.work, ignore_errors=True)
    os.makedirs(cli.work)
    db = os.path.join(cli.work, "hostile.db")
    make_hostile(os.path.join(cli.dbs, "run", "metrics.db"), db)
    before = fingerprint(db)
    report(cli, db, cli.work)
    queries(cli, db)
    filters(cli, db)
    check(fingerprint(db) == before, "the database changed while it was only read")
    utf8 = os.path.join(cli.work, "utf8.db")
    shutil.copy(db, utf8)
    add_invalid_utf8(utf8)
    invalid_utf8(cli, utf8, cli.work)
    sql_is_literal(cli.source_dir)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
